package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/rcm-dev/rcm/bench/trajectory"
	"github.com/rcm-dev/rcm/internal/chat"
)

// Version is the spec format version this package reads and writes.
const Version = 1

// DefaultCheckoutRoot is the directory that holds the checkouts ws1..ws5 when
// a spec does not set checkout_root.
const DefaultCheckoutRoot = "/work"

// Workspaces are the role-neutral checkout names of a session.
var Workspaces = []string{"ws1", "ws2", "ws3", "ws4", "ws5"}

// CheckoutPlaceholder stands for the task's checkout path in request texts;
// it is replaced when a session is materialised (see Spec.Calls).
const CheckoutPlaceholder = "{checkout}"

// Spec is a bench spec: tasks, and sessions that interleave them. See SPEC.md.
type Spec struct {
	Version      int       `json:"version"`
	Name         string    `json:"name,omitempty"`
	CheckoutRoot string    `json:"checkout_root,omitempty"`
	SystemPrompt string    `json:"system_prompt,omitempty"`
	Tasks        []Task    `json:"tasks"`
	Sessions     []Session `json:"sessions"`

	// Layout is LayoutCheckout (the default, "") or LayoutShared.
	Layout string `json:"layout,omitempty"`
	// Returns is how the shared layout's returning requests name their
	// task: ReturnsTitle (the default, "") or ReturnsUntitled.
	Returns string `json:"returns,omitempty"`
}

// Task is a repository snapshot, ordered requests (stages) and a verifier.
type Task struct {
	ID         string `json:"id"`
	Repository string `json:"repository"`
	BaseCommit string `json:"base_commit,omitempty"`
	// Source names where the recorded trajectory came from
	// ("mini-swe-agent-1", "openhands", "claude-code", "swe-bench").
	Source string `json:"source,omitempty"`
	// Workdir is the repository root as the recorded trajectory saw it
	// ("/testbed"); it is rewritten to the session's checkout on replay.
	Workdir  string   `json:"workdir,omitempty"`
	Stages   []Stage  `json:"stages"`
	Verifier Verifier `json:"verifier"`
}

// Stage is one request of a task and the recorded answer to it.
type Stage struct {
	// Request is the user's message; CheckoutPlaceholder marks the checkout.
	Request string `json:"request"`
	// Submit marks the task's final request (A_submit); it must be last.
	Submit bool `json:"submit,omitempty"`
	// Messages are the recorded assistant and tool messages (and any user
	// messages that are not requests) that answer Request, in order.
	Messages []chat.Message `json:"messages,omitempty"`
}

// Verifier says how a task's final patch is scored.
type Verifier struct {
	FailToPass   []string `json:"fail_to_pass,omitempty"`
	PassToPass   []string `json:"pass_to_pass,omitempty"`
	TestCommand  string   `json:"test_command,omitempty"`
	ChangedFiles []string `json:"changed_files,omitempty"`
	// TestPatch is a git diff applied to the clean checkout after the
	// model's patch and before the tests run: the tests the task is judged
	// by (SWE-bench's test_patch), which FAIL_TO_PASS may name.
	TestPatch string `json:"test_patch,omitempty"`
}

// Session pairs a focus task with four distractors of the same repository
// and holds both schedules.
type Session struct {
	ID          string   `json:"id"`
	Focus       string   `json:"focus"`
	Distractors []string `json:"distractors"`
	// Kind is KindNear or KindFar.
	Kind string `json:"kind"`
	Seed uint64 `json:"seed"`
	// Workspaces assigns each of the five tasks its checkout ws1..ws5.
	Workspaces map[string]string `json:"workspaces"`
	Base       []Step            `json:"base"`
	Switch     []Step            `json:"switch"`
}

// Step is one request of a schedule: a stage of a task. Task is the ground
// truth for routing: every call of this step belongs to it.
type Step struct {
	Task  string `json:"task"`
	Stage int    `json:"stage"`
}

// Session kinds.
const (
	KindNear = "near"
	KindFar  = "far"
)

// Load reads, parses and validates a spec file.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return s, nil
}

// Parse decodes a spec (unknown fields are an error) and validates it.
func Parse(b []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse spec: %w", err)
	}
	if dec.More() {
		return nil, errors.New("parse spec: data after the spec object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Root returns the checkout root, DefaultCheckoutRoot when unset.
func (s *Spec) Root() string {
	if s.CheckoutRoot == "" {
		return DefaultCheckoutRoot
	}
	return s.CheckoutRoot
}

// Task returns the task with the given id.
func (s *Spec) Task(id string) (*Task, bool) {
	for i := range s.Tasks {
		if s.Tasks[i].ID == id {
			return &s.Tasks[i], true
		}
	}
	return nil, false
}

// Session returns the session with the given id.
func (s *Spec) Session(id string) (*Session, bool) {
	for i := range s.Sessions {
		if s.Sessions[i].ID == id {
			return &s.Sessions[i], true
		}
	}
	return nil, false
}

// Validate checks the whole spec and returns every problem found, each
// naming the task or session and the field.
func (s *Spec) Validate() error {
	var errs []error
	if s.Version != Version {
		errs = append(errs, fmt.Errorf("version: %d, want %d", s.Version, Version))
	}
	if s.Layout != "" && s.Layout != LayoutCheckout && s.Layout != LayoutShared {
		errs = append(errs, fmt.Errorf("layout: %q, want %s or %s", s.Layout, LayoutCheckout, LayoutShared))
	}
	if s.Returns != "" && s.Returns != ReturnsTitle && s.Returns != ReturnsUntitled {
		errs = append(errs, fmt.Errorf("returns: %q, want %s or %s", s.Returns, ReturnsTitle, ReturnsUntitled))
	}
	if len(s.Tasks) == 0 {
		errs = append(errs, errors.New("tasks: empty"))
	}
	seen := map[string]bool{}
	for i := range s.Tasks {
		t := &s.Tasks[i]
		if t.ID == "" {
			errs = append(errs, fmt.Errorf("tasks[%d]: id: empty", i))
			continue
		}
		if seen[t.ID] {
			errs = append(errs, fmt.Errorf("task %s: id: duplicate", t.ID))
		}
		seen[t.ID] = true
		if err := t.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	ids := map[string]bool{}
	for i := range s.Sessions {
		ss := &s.Sessions[i]
		if ss.ID == "" {
			errs = append(errs, fmt.Errorf("sessions[%d]: id: empty", i))
		} else if ids[ss.ID] {
			errs = append(errs, fmt.Errorf("session %s: id: duplicate", ss.ID))
		}
		ids[ss.ID] = true
		if err := s.validateSession(ss); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Validate checks one task.
func (t *Task) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("task %s: "+format, append([]any{t.ID}, a...)...))
	}
	if t.Repository == "" {
		bad("repository: empty")
	}
	if len(t.Stages) == 0 {
		bad("stages: empty")
	}
	for i, st := range t.Stages {
		if st.Request == "" {
			bad("stages[%d]: request: empty", i)
		}
		if st.Submit && i != len(t.Stages)-1 {
			bad("stages[%d]: submit: only the last stage may submit", i)
		}
		if err := trajectory.ValidateMessages(st.Messages); err != nil {
			bad("stages[%d]: %w", i, err)
		}
	}
	for i, f := range t.Verifier.ChangedFiles {
		if f == "" {
			bad("verifier.changed_files[%d]: empty", i)
		}
	}
	if p := t.Verifier.TestPatch; p != "" && len(ChangedFiles(p)) == 0 {
		bad("verifier.test_patch: no file headers (want a git diff)")
	}
	return errors.Join(errs...)
}

func (s *Spec) validateSession(ss *Session) error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("session %s: "+format, append([]any{ss.ID}, a...)...))
	}
	focus, ok := s.Task(ss.Focus)
	if !ok {
		bad("focus: unknown task %q", ss.Focus)
		return errors.Join(errs...)
	}
	if len(ss.Distractors) != 4 {
		bad("distractors: %d tasks, want 4", len(ss.Distractors))
	}
	members := append([]string{ss.Focus}, ss.Distractors...)
	for i, id := range ss.Distractors {
		d, ok := s.Task(id)
		switch {
		case !ok:
			bad("distractors[%d]: unknown task %q", i, id)
		case slices.Index(members, id) != i+1:
			bad("distractors[%d]: task %s: listed twice", i, id)
		case d.Repository != focus.Repository:
			bad("distractors[%d]: task %s: repository %s, focus has %s", i, id, d.Repository, focus.Repository)
		case overlap(d.Verifier.ChangedFiles, focus.Verifier.ChangedFiles) != "":
			bad("distractors[%d]: task %s: changes %s, as the focus does", i, id,
				overlap(d.Verifier.ChangedFiles, focus.Verifier.ChangedFiles))
		}
	}
	if ss.Kind != KindNear && ss.Kind != KindFar {
		bad("kind: %q, want near or far", ss.Kind)
	}
	used := map[string]string{}
	for _, id := range members {
		ws, ok := ss.Workspaces[id]
		switch {
		case !ok:
			bad("workspaces: task %s: no checkout", id)
		case !slices.Contains(Workspaces, ws):
			bad("workspaces: task %s: %q is not ws1..ws5", id, ws)
		case used[ws] != "":
			bad("workspaces: task %s: %s already holds task %s", id, ws, used[ws])
		default:
			used[ws] = id
		}
	}
	for id := range ss.Workspaces {
		if !slices.Contains(members, id) {
			bad("workspaces: task %s: not in the session", id)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := s.checkSchedules(ss); err != nil {
		bad("%w", err)
	}
	return errors.Join(errs...)
}

// overlap returns a file in both lists, or "".
func overlap(a, b []string) string {
	for _, f := range a {
		if slices.Contains(b, f) {
			return f
		}
	}
	return ""
}

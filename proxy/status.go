package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/memory"
	"github.com/rcm-dev/rcm/redact"
	"github.com/rcm-dev/rcm/transcript"
)

// The harnesses clientOf names.
const (
	ClientOpenCode   = "OpenCode"
	ClientClaudeCode = "Claude Code"
	ClientCodex      = "Codex"
)

// clientOf names the harness that sent a call: by the header that names
// its session, else by its User-Agent; "" when neither tells.
func clientOf(h http.Header) string {
	ua := strings.ToLower(h.Get("User-Agent"))
	switch {
	case h.Get("X-Claude-Code-Session-Id") != "" || strings.HasPrefix(ua, "claude-cli"):
		return ClientClaudeCode
	case h.Get("Session-Id") != "" || h.Get("Thread-Id") != "" || strings.Contains(strings.ToLower(h.Get("Originator")), "codex") || strings.HasPrefix(ua, "codex"):
		return ClientCodex
	case h.Get("X-Session-Id") != "" || h.Get("X-Session-Affinity") != "" || strings.Contains(ua, "opencode"):
		return ClientOpenCode
	}
	return ""
}

// maxTitle bounds a task's title, in bytes.
const maxTitle = 60

// title names the task that turn ti opens: the first line of its request,
// without a [task: ...] tag, cut to maxTitle and redacted (it is stored).
func title(t *transcript.Transcript, ti int) string {
	if t == nil || ti >= len(t.Turns) {
		return ""
	}
	text := strings.TrimSpace(t.Turns[ti].Request(t).Text())
	if rest, ok := strings.CutPrefix(text, "[task:"); ok {
		if _, after, ok := strings.Cut(rest, "]"); ok {
			text = strings.TrimSpace(after)
		}
	}
	line, _, cut := strings.Cut(text, "\n")
	if clipped := str.Clip(line, maxTitle); cut || clipped != line {
		line = strings.TrimSpace(clipped) + "…"
	}
	return redact.String(line)
}

// TaskTitle is a task's title as the inspector and the status line show
// it: its name when rcm drew one from its first request (tasks stored by
// an older rcm are named by their id), else its record's first request.
func TaskTitle(t memory.Task, rec memory.Record) string {
	if t.Name != "" && t.Name != t.ID {
		return t.Name
	}
	if len(rec.Requirements) == 0 {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(rec.Requirements[0].Text), "\n")
	return str.Clip(line, maxTitle)
}

// Status is what a status line shows of a session: its latest agent
// call's task and decision, the tasks it holds and what that call saved.
type Status struct {
	Session string `json:"session"`
	// Task and Title are the latest agent call's task ("" before the
	// first decision); Fallback is that call's X-RCM-Fallback and
	// Confidence its router's.
	Task       string  `json:"task,omitempty"`
	Title      string  `json:"title,omitempty"`
	Confidence float64 `json:"confidence"`
	Fallback   string  `json:"fallback,omitempty"`
	// Tasks counts the session's tasks (rcm never closes one).
	Tasks int `json:"tasks"`
	// Saved is the share of the received context that call did not
	// forward (0 when it forwarded everything, or more).
	Saved float64   `json:"saved"`
	At    time.Time `json:"at,omitzero"`
}

// statusEvents is how many of a session's latest calls the status reads
// to find its latest agent call (side calls come between).
const statusEvents = 16

// showStatus serves GET /rcm/sessions/{id}/status: one small read, for a
// status line that runs on every refresh of its harness.
func (h *Handler) showStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st := Status{Session: id}
	var ok bool
	err := h.store.View(func(tx *memory.View) error {
		var err error
		if _, ok, err = tx.Session(id); err != nil || !ok {
			return err
		}
		tasks, err := tx.Tasks(id)
		if err != nil {
			return err
		}
		st.Tasks = len(tasks)
		evs, err := tx.Events(id, statusEvents)
		if err != nil {
			return err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if e := evs[i]; e.Kind == transcript.Agent.String() {
				st.Task, st.Confidence, st.Fallback, st.At = e.Task, e.Confidence, e.Fallback, e.At
				if e.TokensIn > 0 {
					st.Saved = max(0, 1-float64(e.TokensOut)/float64(e.TokensIn))
				}
				break
			}
		}
		for _, t := range tasks {
			if t.ID == st.Task {
				rec, _, err := tx.Record(id, t.ID) // the zero record when none
				if err != nil {
					return err
				}
				st.Title = TaskTitle(t, rec)
			}
		}
		return nil
	})
	switch {
	case err != nil:
		writeError(w, &httpError{http.StatusInternalServerError, "store_error", err})
	case !ok:
		writeError(w, &httpError{http.StatusNotFound, "no_session", fmt.Errorf("no session %q", id)})
	default:
		writeJSON(w, st)
	}
}

package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// The JSON forms of a script; see the package documentation.
type (
	scriptJSON struct {
		Models  []string          `json:"models"`
		Rules   []json.RawMessage `json:"rules"`
		Default json.RawMessage   `json:"default"`
		Hold    string            `json:"hold"`
	}
	ruleJSON struct {
		When  json.RawMessage `json:"when"`
		Reply json.RawMessage `json:"reply"`
		Times int             `json:"times"`
	}
	replyJSON struct {
		Text       string         `json:"text"`
		ToolCalls  []toolCallJSON `json:"tool_calls"`
		Status     int            `json:"status"`
		Error      string         `json:"error"`
		Delay      string         `json:"delay"`
		ChunkDelay string         `json:"chunk_delay"`
		Usage      *usageJSON     `json:"usage"`
		Hang       bool           `json:"hang"`
	}
	toolCallJSON struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	usageJSON struct {
		Prompt     int `json:"prompt"`
		Completion int `json:"completion"`
	}
)

// LoadScript reads a script in the JSON format of the package documentation
// and validates it. Errors name the rule index and the field.
func LoadScript(r io.Reader) (Script, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return Script{}, fmt.Errorf("scripted: reading the script: %w", err)
	}
	if !isObject(raw) {
		return Script{}, errors.New("scripted: script: want a JSON object")
	}
	var sj scriptJSON
	if err := decodeStrict(raw, &sj); err != nil {
		return Script{}, fmt.Errorf("scripted: script: %w", err)
	}
	s := Script{Models: sj.Models}
	if s.Hold, err = duration(sj.Hold); err != nil {
		return Script{}, fmt.Errorf("scripted: hold: %w", err)
	}
	for i, raw := range sj.Rules {
		rule, err := loadRule(raw)
		if err != nil {
			return Script{}, fmt.Errorf("scripted: rule %d: %w", i, err)
		}
		s.Rules = append(s.Rules, rule)
	}
	d, err := loadReply(sj.Default)
	if err != nil {
		return Script{}, fmt.Errorf("scripted: default%w", err)
	}
	s.Default = d
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// LoadScriptFile reads a script from a JSON file.
func LoadScriptFile(path string) (Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return Script{}, fmt.Errorf("scripted: %w", err)
	}
	defer f.Close()
	s, err := LoadScript(f)
	if err != nil {
		return Script{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func loadRule(raw json.RawMessage) (Rule, error) {
	if !isObject(raw) {
		return Rule{}, errors.New("want a JSON object")
	}
	var rj ruleJSON
	if err := decodeStrict(raw, &rj); err != nil {
		return Rule{}, err
	}
	r := Rule{Times: rj.Times}
	if err := decodeStrict(rj.When, &r.When); err != nil {
		return Rule{}, fmt.Errorf("when: %w", err)
	}
	var err error
	if r.Reply, err = loadReply(rj.Reply); err != nil {
		return Rule{}, fmt.Errorf("reply%w", err)
	}
	return r, nil
}

// loadReply reads a reply; its errors start with the field, as ".delay: ...",
// or with ": " for the reply as a whole.
func loadReply(raw json.RawMessage) (Reply, error) {
	var rj replyJSON
	if err := decodeStrict(raw, &rj); err != nil {
		return Reply{}, fmt.Errorf(": %w", err)
	}
	r, err := rj.reply()
	if err != nil {
		return Reply{}, fmt.Errorf(".%w", err)
	}
	return r, nil
}

func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// decodeStrict decodes one JSON value, refusing unknown keys and trailing
// data. An absent value (nil or null) leaves v as it is.
func decodeStrict(raw []byte, v any) error {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func (rj replyJSON) reply() (Reply, error) {
	r := Reply{Text: rj.Text, Status: rj.Status, ErrorBody: rj.Error, Hang: rj.Hang}
	var err error
	if r.Delay, err = duration(rj.Delay); err != nil {
		return Reply{}, fmt.Errorf("delay: %w", err)
	}
	if r.ChunkDelay, err = duration(rj.ChunkDelay); err != nil {
		return Reply{}, fmt.Errorf("chunk_delay: %w", err)
	}
	if rj.Usage != nil {
		r.Usage = &Usage{Prompt: rj.Usage.Prompt, Completion: rj.Usage.Completion}
	}
	for i, c := range rj.ToolCalls {
		args, err := arguments(c.Arguments)
		if err != nil {
			return Reply{}, fmt.Errorf("tool_calls[%d].arguments: %w", i, err)
		}
		r.ToolCalls = append(r.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return r, nil
}

func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// arguments accepts the arguments' JSON text as a string, or the arguments
// object itself (kept compact, as a model sends it).
func arguments(raw json.RawMessage) (string, error) {
	switch raw = bytes.TrimSpace(raw); {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case raw[0] == '{':
		var b bytes.Buffer
		err := json.Compact(&b, raw)
		return b.String(), err
	}
	return "", errors.New("want a JSON object or a string holding one")
}

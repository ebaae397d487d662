package opencode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Modes are rcm's modes; Config declares one OpenCode provider per mode,
// named after it, whose base URL carries the mode as a path prefix.
var Modes = []string{"native", "router", "rcm"}

// Defaults of Model.
const (
	DefaultModelID = "m1"
	DefaultContext = 128000
	DefaultOutput  = 8192
)

// Config describes an opencode.json that points OpenCode at rcm. The zero
// value of each field means its documented default.
type Config struct {
	// Proxy is rcm's root URL, without /v1: http://127.0.0.1:8787. Each
	// mode's provider gets Proxy + "/" + mode + "/v1" as its base URL.
	Proxy string
	// Modes lists the providers to declare. Default: all of Modes.
	Modes []string
	// Models are the upstream model ids every provider offers.
	// Default: one model, DefaultModelID.
	Models []Model
	// Model is OpenCode's default model, "provider/model".
	// Default: the first mode with the first model ("native/m1").
	Model string
	// SmallModel answers side calls such as titles. Default: Model.
	SmallModel string
	// APIKey is sent as the bearer token (as x-api-key by the Anthropic
	// provider). Empty sends none, so that rcm injects its own
	// --upstream-key.
	APIKey string
	// NPM is the provider package: NPMChat (default) calls
	// /v1/chat/completions, NPMAnthropic /v1/messages, NPMOpenAI
	// /v1/responses.
	NPM string
}

// Provider packages built into OpenCode.
const (
	NPMChat      = "@ai-sdk/openai-compatible"
	NPMAnthropic = "@ai-sdk/anthropic"
	NPMOpenAI    = "@ai-sdk/openai"
)

// Model is one model as OpenCode sees it.
type Model struct {
	ID   string
	Name string // display name; default ID
	// Context and Output are the token limits OpenCode budgets with (a
	// small Context makes it compact early). Defaults DefaultContext and
	// DefaultOutput.
	Context int
	Output  int
}

// Ref returns the "provider/model" reference OpenCode uses for model id
// through mode's provider.
func Ref(mode, model string) string { return mode + "/" + model }

// The JSON shapes of opencode.json (only what rcm sets).
type (
	fileJSON struct {
		Schema     string                  `json:"$schema"`
		Autoupdate bool                    `json:"autoupdate"`
		Share      string                  `json:"share"`
		Model      string                  `json:"model"`
		SmallModel string                  `json:"small_model"`
		Provider   map[string]providerJSON `json:"provider"`
		Permission map[string]string       `json:"permission"`
	}
	providerJSON struct {
		NPM     string               `json:"npm"`
		Name    string               `json:"name"`
		Options optionsJSON          `json:"options"`
		Models  map[string]modelJSON `json:"models"`
	}
	optionsJSON struct {
		BaseURL string `json:"baseURL"`
		APIKey  string `json:"apiKey,omitempty"`
	}
	modelJSON struct {
		Name     string    `json:"name"`
		ToolCall bool      `json:"tool_call"`
		Limit    limitJSON `json:"limit"`
	}
	limitJSON struct {
		Context int `json:"context"`
		Output  int `json:"output"`
	}
)

// permissions lets the agent work unattended: nobody answers prompts in a
// headless run, and a pending permission would stall the turn.
var permissions = map[string]string{"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"}

// JSON returns the opencode.json content, or an error naming the first
// invalid field.
func (c Config) JSON() ([]byte, error) {
	u, err := url.Parse(c.Proxy)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("opencode: config: proxy %q: want rcm's root URL such as http://127.0.0.1:8787", c.Proxy)
	}
	root := strings.TrimSuffix(strings.TrimRight(c.Proxy, "/"), "/v1")
	modes := c.Modes
	if len(modes) == 0 {
		modes = Modes
	}
	models := c.Models
	if len(models) == 0 {
		models = []Model{{ID: DefaultModelID}}
	}
	f := fileJSON{
		Schema:     "https://opencode.ai/config.json",
		Share:      "disabled",
		Provider:   map[string]providerJSON{},
		Permission: permissions,
	}
	for _, mode := range modes {
		if !slices.Contains(Modes, mode) {
			return nil, fmt.Errorf("opencode: config: mode %q: want one of %s", mode, strings.Join(Modes, ", "))
		}
		p := providerJSON{
			NPM:     cmp.Or(c.NPM, NPMChat),
			Name:    "rcm, " + mode + " mode",
			Options: optionsJSON{BaseURL: root + "/" + mode + "/v1", APIKey: c.APIKey},
			Models:  map[string]modelJSON{},
		}
		for _, m := range models {
			if m.ID == "" || m.Context < 0 || m.Output < 0 {
				return nil, fmt.Errorf("opencode: config: model %+v: want an id and non-negative limits", m)
			}
			mj := modelJSON{Name: m.Name, ToolCall: true, Limit: limitJSON{m.Context, m.Output}}
			if mj.Name == "" {
				mj.Name = m.ID
			}
			if mj.Limit.Context == 0 {
				mj.Limit.Context = DefaultContext
			}
			if mj.Limit.Output == 0 {
				mj.Limit.Output = DefaultOutput
			}
			p.Models[m.ID] = mj
		}
		f.Provider[mode] = p
	}
	f.Model, f.SmallModel = c.Model, c.SmallModel
	if f.Model == "" {
		f.Model = Ref(modes[0], models[0].ID)
	}
	if f.SmallModel == "" {
		f.SmallModel = f.Model
	}
	for _, ref := range []string{f.Model, f.SmallModel} {
		mode, id, _ := strings.Cut(ref, "/")
		if _, ok := f.Provider[mode].Models[id]; !ok {
			return nil, fmt.Errorf("opencode: config: model %q is not a declared provider/model", ref)
		}
	}
	return json.MarshalIndent(f, "", "  ")
}

// Write puts the opencode.json content at path (GlobalConfig(home) keeps a
// project directory clean), creating its directory.
func (c Config) Write(path string) error {
	b, err := c.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("opencode: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("opencode: %w", err)
	}
	return nil
}

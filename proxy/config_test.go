package proxy

import "testing"

// TestConfigAnthropicUpstream: the Anthropic upstream defaults to the
// public API, loses trailing slashes and is checked like the other.
func TestConfigAnthropicUpstream(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{"", DefaultAnthropic, false},
		{"http://127.0.0.1:9000/", "http://127.0.0.1:9000", false},
		{"ftp://x", "", true},
		{"localhost", "", true},
	} {
		cfg := Config{AnthropicUpstream: c.in, DB: t.TempDir() + "/rcm.db"}
		err := cfg.Validate()
		cfg.Defaults()
		if (err != nil) != c.bad {
			t.Fatalf("%q: err %v", c.in, err)
		}
		if !c.bad && cfg.AnthropicUpstream != c.want {
			t.Fatalf("%q: got %q, want %q", c.in, cfg.AnthropicUpstream, c.want)
		}
	}
}

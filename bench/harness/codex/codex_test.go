package codex

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/bench/harness"
)

// TestCodexOpen: each agent gets a CODEX_HOME of its own whose provider
// points at the arm's mode and sends the agent's id and the arm's
// threshold (none in native); the key stays in the environment.
func TestCodexOpen(t *testing.T) {
	home := t.TempDir()
	c := &Harness{Bin: "codex", Home: home, Proxy: "http://127.0.0.1:9/", Model: "m", Key: "sk-secret"}
	ids := map[string]bool{}
	for _, arm := range []harness.Arm{{Mode: "native", Threshold: math.NaN()}, {Mode: "rcm", Threshold: 0.8}} {
		a, err := c.Open(context.Background(), arm, t.TempDir(), "title")
		if err != nil {
			t.Fatal(err)
		}
		ids[a.ID()] = true
		b, err := os.ReadFile(filepath.Join(home, a.ID(), ".codex", "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := string(b)
		want := `base_url = "http://127.0.0.1:9/` + arm.Mode + `/v1"`
		if !strings.Contains(cfg, want) || !strings.Contains(cfg, `"X-Session-Id" = "`+a.ID()+`"`) || strings.Contains(cfg, "sk-secret") {
			t.Errorf("%s: config.toml\n%s", arm.Mode, cfg)
		}
		if th := strings.Contains(cfg, `"X-RCM-Threshold" = "0.8"`); th != (arm.Mode == "rcm") {
			t.Errorf("%s: threshold header %v:\n%s", arm.Mode, th, cfg)
		}
	}
	if len(ids) != 2 {
		t.Errorf("agent ids %v, want two distinct", ids)
	}
}

package bench

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/rcm-dev/rcm/bench/scripted"
	"github.com/rcm-dev/rcm/proxy"
)

// TestReplayMessagesMatchesChat replays the small spec through the real
// proxy twice, as chat completions and as Anthropic Messages: the same
// histories must give the same recall, routing, fallbacks and compaction
// metrics in every mode, and contamination within 0.001 (a byte share).
func TestReplayMessagesMatchesChat(t *testing.T) {
	spec := smallSpec(t)
	run := func(api string) *Results {
		up := scripted.New(scripted.Script{})
		upSrv := httptest.NewServer(up)
		t.Cleanup(upSrv.Close)
		cfg := proxy.Config{Upstream: upSrv.URL + "/v1", AnthropicUpstream: upSrv.URL, DB: filepath.Join(t.TempDir(), "rcm.db")}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		h, err := proxy.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		px := httptest.NewServer(h)
		t.Cleanup(func() { px.Close(); h.Close() })
		res, err := Replay(context.Background(), spec, Options{Proxy: px.URL, Upstream: up, API: api, Thresholds: []float64{0.8}})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if res.Completed != len(spec.Sessions) || len(res.Summaries) != 3 {
			t.Fatalf("%s: completed %d of %d, %d rows", api, res.Completed, len(spec.Sessions), len(res.Summaries))
		}
		return res
	}
	chat, msgs := run(APIChat), run(APIMessages)
	for i, c := range chat.Summaries {
		m := msgs.Summaries[i]
		for _, v := range []struct {
			name string
			a, b Num
		}{
			{"focus recall", c.FocusRecall, m.FocusRecall},

			{"routing accuracy", c.RoutingAccuracy, m.RoutingAccuracy},
			{"routed", c.Routed, m.Routed},
			{"fallback rate", c.FallbackRate, m.FallbackRate},
			{"post-switch recall", c.PostSwitch.FocusRecall, m.PostSwitch.FocusRecall},
			{"compaction coverage", c.CompactionCoverage, m.CompactionCoverage},
			{"compaction sections", c.CompactionSections, m.CompactionSections},
		} {
			if fmt.Sprint(v.a) != fmt.Sprint(v.b) {
				t.Errorf("%s: %s %v as chat, %v as messages", c.Mode, v.name, v.a, v.b)
			}
		}
		// Contamination is a share of forwarded bytes, and a message's
		// bytes differ a little between the two encodings.
		for _, v := range [][2]Num{{c.Contamination, m.Contamination}, {c.PostSwitch.Contamination, m.PostSwitch.Contamination}} {
			if math.Abs(float64(v[0]-v[1])) > 1e-3 {
				t.Errorf("%s: contamination %v as chat, %v as messages", c.Mode, v[0], v[1])
			}
		}
		t.Logf("%s: recall %v, contamination %v, routing %v, fallback %v, compaction coverage %v (chat and messages alike); tokens ratio chat %v messages %v",
			c.Mode, c.FocusRecall, c.Contamination, c.RoutingAccuracy, c.FallbackRate, c.CompactionCoverage, c.TokensRatio, m.TokensRatio)
	}
}

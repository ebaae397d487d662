package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/rcm-dev/rcm/memory"
)

// checkRecorded checks what a real client's sessions left in rcm's store,
// as the inspector serves it at base: each session of calls (its id, and
// how many model calls of it reached the upstream) is listed at
// /rcm/sessions, counts that many calls and shows one event for each.
// A client may close its connection as soon as it has read an answer's
// terminal event (Codex does); its call must be recorded all the same.
func checkRecorded(t *testing.T, h *Handler, base string, calls map[string]int) {
	t.Helper()
	h.after.Wait()
	var listed []memory.Session
	getJSON(t, base+"/rcm/sessions?limit=1000", &listed)
	byID := map[string]memory.Session{}
	for _, s := range listed {
		byID[s.ID] = s
	}
	for id, n := range calls {
		s, ok := byID[id]
		if !ok {
			t.Errorf("session %s not listed at /rcm/sessions (%d listed)", id, len(listed))
			continue
		}
		var v SessionView
		getJSON(t, base+"/rcm/sessions/"+url.PathEscape(id)+"?events=1000", &v)
		if s.Calls != n || len(v.Events) != n {
			t.Errorf("session %s: %d calls reached the upstream, rcm recorded %d with %d events", id, n, s.Calls, len(v.Events))
		}
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/rcm-dev/rcm/internal/chattest"
)

// TestStoreReadsPerCall counts the store's read transactions over a
// session that works on task 1, switches to task 2 and returns: each
// request's turn makes a call that opens it and one after its tool ran.
// Native mode reads nothing; router mode reads the labels once a call; rcm
// mode reads the labels with the task's record when the turn's task is
// known (the second call of a turn), and the record apart, once routing has
// placed the turn, when it is not (the first; the read is not held open
// across the routing, which may ask a model).
func TestStoreReadsPerCall(t *testing.T) {
	for _, c := range []struct {
		mode          string
		opens, within int // reads of a call that opens a turn, of one within it
	}{
		{"native", 0, 0},
		{"router", 1, 1},
		{"rcm", 2, 1},
	} {
		t.Run(c.mode, func(t *testing.T) {
			srv, h := setup(t, &recorder{}, nil)
			hdr := http.Header{"X-Session-Id": {"ses_reads"}, "X-Rcm-Mode": {c.mode}}
			var ms []chat.Message
			var tasks []string
			call := func(i int, want int) {
				t.Helper()
				before := h.store.ReadTxs()
				resp := post(t, srv.URL+"/v1/chat/completions", chattest.OpenCodeBody(t, ms...), hdr)
				io.Copy(io.Discard, resp.Body)
				h.after.Wait()
				tasks = append(tasks, resp.Header.Get(HeaderTask))
				if got := h.store.ReadTxs() - before; got != want {
					t.Errorf("request %d, call of task %q: %d read transactions, want %d", i, resp.Header.Get(HeaderTask), got, want)
				}
			}
			for i, req := range switchRequests {
				ms = append(ms, chattest.User(req))
				call(i, c.opens)
				id := fmt.Sprintf("call_%d", i)
				ms = append(ms, chattest.ToolCall(id, "bash", map[string]string{"command": "git status", "workdir": switchDirs[i], "description": "status"}),
					chattest.ToolResult(id, "On branch main, work of request "+fmt.Sprint(i)))
				call(i, c.within)
				ms = append(ms, chattest.Assistant("Done with request "+fmt.Sprint(i)))
			}
			// The return to task 1 was routed there.
			if want := map[bool]string{true: ",,,,,", false: "t1,t1,t2,t2,t1,t1"}[c.mode == "native"]; strings.Join(tasks, ",") != want {
				t.Errorf("tasks per call %v, want %s", tasks, want)
			}
		})
	}
}

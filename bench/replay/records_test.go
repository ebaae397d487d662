package replay

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRecordSizesWaitsForStoredCalls: the inspector shows the session's
// events as the proxy stores them; recordSizes waits until the calls it
// asks about are in and renders each record.
func TestRecordSizesWaitsForStoredCalls(t *testing.T) {
	recs := []json.RawMessage{
		json.RawMessage(`{"task":"t1","requirements":[{"text":"fix the parser in /work/ws1"}],"unfinished":["run the tests"]}`),
		json.RawMessage(`{"task":"t2","workspace":"/work/ws2"}`),
	}
	// A stand-in for memory.Render: the record's task and text fields.
	render := func(raw json.RawMessage) (string, error) {
		var r struct {
			Task         string
			Requirements []struct{ Text string }
			Unfinished   []string
		}
		err := json.Unmarshal(raw, &r)
		text := "Task " + r.Task + "\n" + strings.Join(r.Unfinished, "\n")
		for _, q := range r.Requirements {
			text += "\n" + q.Text
		}
		return text, err
	}
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != "/rcm/sessions/a%2Fb" {
			http.Error(w, `{"error":{"message":"no session"}}`, 404)
			return
		}
		want, _ := strconv.Atoi(r.URL.Query().Get("events"))
		stored := min(int(polls.Add(1)), want) // one more call stored per poll
		events := make([]json.RawMessage, stored)
		for i := range events {
			events[i] = json.RawMessage(`{"kind":"agent"}`)
		}
		json.NewEncoder(w).Encode(map[string]any{"records": recs, "events": events})
	}))
	defer srv.Close()
	r := &runner{opts: Options{Proxy: srv.URL, Client: srv.Client(), Render: render}, recordWait: 50 * time.Millisecond}
	got, err := r.recordSizes(context.Background(), "a/b", 3)
	if err != nil {
		t.Fatal(err)
	}
	if polls.Load() != 3 || len(got) != 2 || got["t1"] != 49 || got["t2"] != 8 {
		t.Errorf("after %d polls: %v", polls.Load(), got)
	}
	// A session the proxy has not stored yet (404) is waited for, like one
	// whose calls are not all in, until nothing moves for recordWait.
	if _, err := r.recordSizes(context.Background(), "other", 1); err == nil || !strings.Contains(err.Error(), "0 of 1 calls stored") {
		t.Errorf("an unknown session: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.recordSizes(ctx, "a/b", 1000); err == nil {
		t.Error("a cancelled wait: no error")
	}
}

func TestSlopeAndRecordBytes(t *testing.T) {
	for _, c := range []struct {
		ys   []float64
		want float64
	}{
		{[]float64{100, 200, 300}, 100},
		{[]float64{300, 300}, 0},
		{[]float64{100, 400, 400}, 150},
		{[]float64{5}, math.NaN()},
		{nil, math.NaN()},
	} {
		if got := slopeOf(c.ys); got != c.want && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("Slope(%v) = %v, want %v", c.ys, got, c.want)
		}
	}
	rs := []*SessionResult{
		{RecordBytes: recordBytes([]float64{100, 200, 300})},
		{RecordBytes: recordBytes([]float64{50, 450})},
		{RecordBytes: recordBytes(nil)}, // no record: left out
	}
	got := recordBytesOf(rs)
	if got.Mean != 225 || got.Max != 450 || got.PerTurn != 250 || len(got.ByTurn) != 3 || got.ByTurn[0] != 75 || got.ByTurn[1] != 325 || got.ByTurn[2] != 300 {
		t.Errorf("over sessions: %+v", got)
	}
}

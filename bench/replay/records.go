package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// recordWait bounds how long the replay waits for the proxy to store one
// more of a session's calls (it writes after the response, in the
// background; on a loaded machine its writer may lag well behind).
const recordWait = 10 * time.Second

// recordSizes asks the proxy's inspector (GET /rcm/sessions/{id}) for the
// session's task records once the writes of its first calls calls are
// stored, and returns each task's record size: the bytes of its text as
// Options.Render renders it. Each call appends one event in the same
// transaction as its record update, and a session's writes are ordered, so
// calls events mean that those calls' updates, and no later one, are in.
func (r *runner) recordSizes(ctx context.Context, session string, calls int) (map[string]int, error) {
	v, err := r.events(ctx, r.opts.Proxy, session, calls)
	if err != nil {
		return nil, err
	}
	sizes := make(map[string]int, len(v.Records))
	for _, rec := range v.Records {
		text, err := r.opts.Render(rec)
		if err != nil {
			return nil, fmt.Errorf("inspector: record: %w", err)
		}
		sizes[gjson.GetBytes(rec, "task").String()] = len(text)
	}
	return sizes, nil
}

// events asks the inspector of proxy (its base URL) for the session's view once the
// writes of its first calls calls are stored: its records and its last
// calls events, one per call in order.
func (r *runner) events(ctx context.Context, proxy, session string, calls int) (*sessionView, error) {
	u := proxy + "/rcm/sessions/" + url.PathEscape(session) + "?events=" + strconv.Itoa(calls)
	wait := r.recordWait
	if wait == 0 {
		wait = recordWait
	}
	deadline := time.Now().Add(wait)
	pause, stored := time.Millisecond, 0
	for {
		v, err := r.inspect(ctx, u)
		if err != nil {
			return nil, err
		}
		if len(v.Events) > stored {
			// The writer is moving: the bound is on a stall, not on the lag.
			stored, deadline = len(v.Events), time.Now().Add(wait)
		}
		if len(v.Events) >= calls {
			return v, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("inspector: %d of %d calls stored, none more in %s", len(v.Events), calls, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// sessionView is the part of the inspector's session view the replay reads.
type sessionView struct {
	Records []json.RawMessage `json:"records"`
	Events  []json.RawMessage `json:"events"`
}

func (r *runner) inspect(ctx context.Context, u string) (*sessionView, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	defer resp.Body.Close()
	var v sessionView
	switch {
	case resp.StatusCode == http.StatusNotFound:
		// Not stored yet: the session's first write may still be queued.
	case resp.StatusCode != http.StatusOK:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		err = fmt.Errorf("GET %s: status %d: %s", u, resp.StatusCode, msg)
	default:
		err = json.NewDecoder(resp.Body).Decode(&v)
	}
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	return &v, nil
}

// slopeOf returns the least-squares slope of ys over their indices (the
// growth per step); NaN with fewer than two values.
func slopeOf(ys []float64) float64 {
	n := float64(len(ys))
	if len(ys) < 2 {
		return nan()
	}
	var sx, sy, sxy, sxx float64
	for i, y := range ys {
		x := float64(i)
		sx, sy, sxy, sxx = sx+x, sy+y, sxy+x*y, sxx+x*x
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

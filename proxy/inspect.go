package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/rcm-dev/rcm/inspector"
	"github.com/rcm-dev/rcm/memory"
)

// inspector serves rcm's own read-only view of its store under /rcm/. The
// store's file is locked by the running proxy, so tools (rcm inspect) ask
// here rather than opening it.
func (h *Handler) inspector() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /rcm/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"status": "ok"})
	})
	// Ready when the store answers: a load balancer sends a replica
	// calls only then (it serves them without the store too, failing open).
	mux.HandleFunc("GET /rcm/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := h.store.Ping(r.Context()); err != nil {
			writeError(w, &httpError{http.StatusServiceUnavailable, "store_unavailable", err})
			return
		}
		writeJSON(w, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /rcm/metrics", h.serveMetrics)
	mux.HandleFunc("GET /rcm/sessions", h.listSessions)
	mux.HandleFunc("GET /rcm/sessions/{id}", h.showSession)
	mux.HandleFunc("GET /rcm/sessions/{id}/status", h.showStatus)
	// The page, its live feed and the timeline plots.
	inspector.New(h.store, &h.feed, func(w http.ResponseWriter, status int, code string, err error) {
		writeError(w, &httpError{status, code, err})
	}).Register(mux)
	mux.HandleFunc("/rcm/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &httpError{http.StatusNotFound, "not_found", fmt.Errorf("no inspector route %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

// maxPage bounds ?limit= of GET /rcm/sessions.
const maxPage = 1000

// listSessions serves a page of sessions, most recently used first:
// ?limit= (default memory.DefaultPageSize) and ?after= (the cursor of the
// previous page). The body stays a JSON array; the next page, when there
// is one, is in a Link header (rel="next"), as GitHub's API does it.
func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := memory.DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > maxPage {
			writeError(w, &httpError{http.StatusBadRequest, "bad_query", fmt.Errorf("limit=%q: want a number in 1..%d", v, maxPage)})
			return
		}
		limit = n
	}
	ss, next, err := h.store.SessionPage(limit, q.Get("after"))
	if errors.Is(err, memory.ErrCursor) {
		writeError(w, &httpError{http.StatusBadRequest, "bad_query", fmt.Errorf("after: %w", err)})
		return
	}
	if err != nil {
		writeError(w, &httpError{http.StatusInternalServerError, "store_error", err})
		return
	}
	items := make([]SessionItem, len(ss))
	err = h.store.View(func(tx *memory.View) error {
		for i, s := range ss {
			it := &items[i]
			it.Session = s
			tasks, err := tx.Tasks(s.ID)
			if err != nil {
				return err
			}
			it.Tasks = len(tasks)
			if len(tasks) > 0 {
				first := slices.MinFunc(tasks, func(a, b memory.Task) int { return a.Created.Compare(b.Created) })
				it.First = TaskTitle(first, memory.Record{})
			}
			evs, err := tx.Events(s.ID, 1)
			if err != nil {
				return err
			}
			if len(evs) > 0 {
				it.Client = evs[0].Client
			}
		}
		return nil
	})
	if err != nil {
		writeError(w, &httpError{http.StatusInternalServerError, "store_error", err})
		return
	}
	if next != "" {
		w.Header().Set("Link", fmt.Sprintf(`</rcm/sessions?limit=%d&after=%s>; rel="next"`, limit, url.QueryEscape(next)))
	}
	writeJSON(w, items)
}

// SessionItem is a session as the inspector's list shows it.
type SessionItem struct {
	memory.Session
	// Client is the harness of its latest call; First its first request
	// (the title of its first task); Tasks how many tasks it holds.
	Client string `json:"client,omitempty"`
	First  string `json:"first,omitempty"`
	Tasks  int    `json:"tasks"`
}

// SessionView is what the inspector shows of one session.
type SessionView struct {
	Session memory.Session  `json:"session"`
	Tasks   []memory.Task   `json:"tasks"`
	Records []memory.Record `json:"records"`
	Events  []memory.Event  `json:"events"`
}

func (h *Handler) showSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	limit := 100
	if v := r.URL.Query().Get("events"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, &httpError{http.StatusBadRequest, "bad_query", fmt.Errorf("events=%q: want a number", v)})
			return
		}
		limit = n
	}
	// One read transaction: the records and the events agree (a call's
	// record update and its event commit together).
	var v SessionView
	var ok bool
	err := h.store.View(func(tx *memory.View) (err error) {
		if v.Session, ok, err = tx.Session(id); err != nil || !ok {
			return err
		}
		if v.Tasks, err = tx.Tasks(id); err != nil {
			return err
		}
		if err = tx.CountTurns(id, v.Tasks); err != nil {
			return err
		}
		if v.Records, err = tx.Records(id); err != nil {
			return err
		}
		// Each task's title, from its name or its record.
		for i, t := range v.Tasks {
			var rec memory.Record
			if j := slices.IndexFunc(v.Records, func(r memory.Record) bool { return r.Task == t.ID }); j >= 0 {
				rec = v.Records[j]
			}
			v.Tasks[i].Name = TaskTitle(t, rec)
		}
		v.Events, err = tx.Events(id, limit)
		return err
	})
	if err == nil && !ok {
		writeError(w, &httpError{http.StatusNotFound, "no_session", fmt.Errorf("no session %q", id)})
		return
	}
	if err != nil {
		writeError(w, &httpError{http.StatusInternalServerError, "store_error", err})
		return
	}
	writeJSON(w, v)
}

package inspector

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/rcm-dev/rcm/memory"
)

//go:embed ui
var files embed.FS

// Source is what the inspector reads of the store.
type Source interface {
	Session(id string) (memory.Session, bool, error)
	Tasks(session string) ([]memory.Task, error)
	Events(session string, limit int) ([]memory.Event, error)
}

// Inspector serves the page, its assets, the live feed and the timeline.
type Inspector struct {
	src  Source
	feed *Feed
	fail Fail
}

// Fail answers a request the inspector cannot serve, with its status, a
// machine-readable code and why: the proxy answers every error under /rcm/
// in one shape.
type Fail func(w http.ResponseWriter, status int, code string, err error)

// New returns an inspector reading src, streaming feed and answering its
// errors with fail.
func New(src Source, feed *Feed, fail Fail) *Inspector {
	return &Inspector{src: src, feed: feed, fail: fail}
}

// Register adds the inspector's routes to mux, which serves /rcm/.
func (in *Inspector) Register(mux *http.ServeMux) {
	ui, _ := fs.Sub(files, "ui") // cannot fail: ui is embedded
	mux.Handle("GET /rcm/{$}", page(ui))
	mux.Handle("GET /rcm/ui/", http.StripPrefix("/rcm/ui/", in.assets(ui)))
	mux.HandleFunc("GET /rcm/feed", func(w http.ResponseWriter, r *http.Request) {
		if !in.feed.Serve(w, r) {
			in.fail(w, http.StatusServiceUnavailable, "shutting_down", errors.New("rcm is shutting down"))
		}
	})
	mux.HandleFunc("GET /rcm/sessions/{id}/timeline.svg", in.timeline)
}

// page serves index.html. The page and its assets are not cached, so that
// a new rcm binary's page is never mixed with an old one's script.
func page(ui fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		// Everything the page uses is its own: nothing inline, nothing
		// from elsewhere, and no other site may frame it.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		http.ServeFileFS(w, r, ui, "index.html")
	})
}

func (in *Inspector) assets(ui fs.FS) http.Handler {
	files := http.FileServerFS(ui)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The file server's own 404 is text.
		if _, err := fs.Stat(ui, strings.TrimSuffix(cmp.Or(r.URL.Path, "."), "/")); err != nil {
			in.fail(w, http.StatusNotFound, "not_found", fmt.Errorf("no inspector file %s", r.URL.Path))
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

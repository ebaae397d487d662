package inspector

import (
	"embed"
	"io/fs"
	"net/http"

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
}

// New returns an inspector reading src and streaming feed.
func New(src Source, feed *Feed) *Inspector {
	return &Inspector{src: src, feed: feed}
}

// Register adds the inspector's routes to mux, which serves /rcm/.
func (in *Inspector) Register(mux *http.ServeMux) {
	ui, _ := fs.Sub(files, "ui") // cannot fail: ui is embedded
	mux.Handle("GET /rcm/{$}", page(ui))
	mux.Handle("GET /rcm/ui/", http.StripPrefix("/rcm/ui/", assets(ui)))
	mux.Handle("GET /rcm/feed", in.feed)
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

func assets(ui fs.FS) http.Handler {
	files := http.FileServerFS(ui)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

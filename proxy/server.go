package proxy

import "net/http"

// Server returns the http.Server that serves h with the configured client
// timeouts. It sets no read or write timeout on whole requests: a model's
// stream runs as long as the model talks.
func (h *Handler) Server() *http.Server {
	return &http.Server{
		Addr:              h.cfg.Listen,
		Handler:           h,
		ReadHeaderTimeout: h.cfg.ReadHeaderTimeout,
		IdleTimeout:       h.cfg.IdleTimeout,
		ErrorLog:          h.errLog,
	}
}

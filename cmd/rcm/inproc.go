package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/rcm-dev/rcm/internal/scripted"
	"github.com/rcm-dev/rcm/proxy"
)

// startProxy serves rcm in-process on a loopback port for the bench
// commands, logging to logf at level. front, when not nil, wraps the proxy
// (the run's meter). stop shuts the server down and closes the store.
func startProxy(cfg proxy.Config, logf io.Writer, level slog.Level, front func(http.Handler) http.Handler, stderr io.Writer) (url string, stop func(), err error) {
	h, err := proxy.New(cfg, slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: level})))
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.Close()
		return "", nil, err
	}
	var handler http.Handler = h
	if front != nil {
		handler = front(h)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() {
		srv.Close()
		if err := h.Close(); err != nil {
			fmt.Fprintln(stderr, "rcm: closing the proxy's store:", err)
		}
	}, nil
}

// startScripted serves the scripted upstream up on a loopback port for the
// bench commands; url is its OpenAI-style base (".../v1"), and stop shuts
// it down.
func startScripted(up *scripted.Server) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go up.Serve(ctx, ln)
	return "http://" + ln.Addr().String() + "/v1", cancel, nil
}

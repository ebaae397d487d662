//go:build unix

package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake `opencode serve` (see fakeServe) when
// RCM_FAKE_OPENCODE is set, so that Server is tested without the real client.
func TestMain(m *testing.M) {
	if mode := os.Getenv("RCM_FAKE_OPENCODE"); mode != "" {
		fakeServe(mode, os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

func TestRunOutputAndErrors(t *testing.T) {
	bin := script(t, `echo out; echo err >&2; [ "$1" = ok ]`)
	out, err := Run(t.Context(), bin, t.TempDir(), os.Environ(), "ok")
	if err != nil || string(out) != "out\n" {
		t.Fatalf("Run = %q, %v", out, err)
	}
	if _, err := Run(t.Context(), bin, t.TempDir(), os.Environ(), "fail"); err == nil || !strings.Contains(err.Error(), "err") {
		t.Fatalf("failing run: error %v, want one carrying stderr", err)
	}
}

// A cancelled run ends OpenCode's children too: nothing outlives Run.
func TestRunKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	bin := script(t, `sleep 60 & echo $! > child; wait`)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, bin, dir, os.Environ())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", err)
	}
	assertGone(t, filepath.Join(dir, "child"))
}

func TestServerAPI(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(t.Context(), os.Args[0], dir, fakeEnv("serve", dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := t.Context()
	proj := filepath.Join(dir, "proj with space")

	s, err := srv.CreateSession(ctx, proj, "")
	if err != nil || s.ID != "ses_fake" || s.Directory != proj {
		t.Fatalf("CreateSession = %+v, %v", s, err)
	}
	m, err := srv.Prompt(ctx, s.ID, proj, "rcm", "m1", "hello there")
	if err != nil || m.Text() != "hello there via rcm/m1" || len(m.Tools()) != 1 || m.Tools()[0].State.Output != "ran" {
		t.Fatalf("Prompt = %+v, %v", m, err)
	}
	_, err = srv.Prompt(ctx, s.ID, proj, "rcm", "m1", "fail")
	var te *TurnError
	if !errors.As(err, &te) || te.Message.Info.Error.Data.StatusCode != 400 || !strings.Contains(err.Error(), "APIError: boom (status 400)") {
		t.Fatalf("failed turn: error %v", err)
	}
	msgs, err := srv.Messages(ctx, s.ID, proj)
	if err != nil || len(msgs) != 2 || msgs[0].Info.Role != "user" || msgs[1].Text() != "answer" {
		t.Fatalf("Messages = %+v, %v", msgs, err)
	}
	if err := srv.Summarize(ctx, s.ID, proj, "native", "m1"); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.GetSession(ctx, s.ID, proj); err != nil || got.Title != "Fake title" {
		t.Fatalf("GetSession = %+v, %v", got, err)
	}
	if _, err := srv.Messages(ctx, "ses_missing", proj); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing session: error %v", err)
	}

	// A prompt whose context ends aborts the turn.
	hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := srv.Prompt(hctx, s.ID, proj, "rcm", "m1", "hang"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging prompt: error %v", err)
	}

	srv.Close()
	srv.Close() // idempotent
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	q := "?" + url.Values{"directory": {proj}}.Encode()
	for _, want := range []string{
		"POST /session" + q + " {}",
		"POST /session/ses_fake/message" + q + ` {"model":{"modelID":"m1","providerID":"rcm"},"parts":[{"text":"hello there","type":"text"}]}`,
		"POST /session/ses_fake/summarize" + q + ` {"modelID":"m1","providerID":"native"}`,
		"POST /session/ses_fake/abort" + q + " ",
	} {
		if !strings.Contains(string(log), want+"\n") {
			t.Errorf("fake server log lacks %q:\n%s", want, log)
		}
	}
	assertGone(t, filepath.Join(dir, "child"))
}

func TestServerStartFails(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), os.Args[0], dir, fakeEnv("exit", dir), 0)
	if err == nil || !strings.Contains(err.Error(), "process exited") || !strings.Contains(err.Error(), "fake: cannot serve") {
		t.Fatalf("error %v, want the exit and the server's output", err)
	}
}

func TestServerStartTimeout(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := Start(ctx, os.Args[0], dir, fakeEnv("mute", dir), 0)
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Fatalf("error %v, want the deadline", err)
	}
	assertGone(t, filepath.Join(dir, "child"))
}

func fakeEnv(mode, dir string) []string {
	return append(os.Environ(), "RCM_FAKE_OPENCODE="+mode, "RCM_FAKE_DIR="+dir)
}

// fakeServe plays `opencode serve --hostname H --port P` for the Server
// tests: mode serve answers the API, exit fails at once, mute never answers.
// Every mode starts a child (its pid in DIR/child) that must die with it;
// requests are logged to DIR/log.
func fakeServe(mode string, args []string) {
	dir := os.Getenv("RCM_FAKE_DIR")
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		panic(err)
	}
	os.WriteFile(filepath.Join(dir, "child"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
	port := ""
	for i, a := range args {
		if a == "--port" && i+1 < len(args) {
			port = args[i+1]
		}
	}
	switch {
	case mode == "exit":
		fmt.Fprintln(os.Stderr, "fake: cannot serve")
		os.Exit(3)
	case mode == "mute" || len(args) == 0 || args[0] != "serve":
		select {}
	}
	var mu sync.Mutex
	logf, _ := os.Create(filepath.Join(dir, "log"))
	reply := func(w http.ResponseWriter, v string) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(v))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, r *http.Request) {
		reply(w, `{"healthy":true,"version":"fake"}`)
	})
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(map[string]string{"id": "ses_fake", "title": "New session", "directory": r.URL.Query().Get("directory")})
		reply(w, string(b))
	})
	mux.HandleFunc("GET /session/ses_fake", func(w http.ResponseWriter, r *http.Request) {
		reply(w, `{"id":"ses_fake","title":"Fake title"}`)
	})
	mux.HandleFunc("GET /session/ses_fake/message", func(w http.ResponseWriter, r *http.Request) {
		reply(w, `[{"info":{"role":"user","summary":{"diffs":[]}},"parts":[{"type":"text","text":"q"}]},
			{"info":{"role":"assistant","summary":true},"parts":[{"type":"step-start"},{"type":"text","text":"answer"}]}]`)
	})
	mux.HandleFunc("POST /session/ses_fake/message", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Model struct{ ProviderID, ModelID string }
			Parts []struct{ Text string }
		}
		json.NewDecoder(r.Body).Decode(&in)
		switch text := in.Parts[0].Text; text {
		case "hang":
			<-r.Context().Done()
		case "fail":
			reply(w, `{"info":{"role":"assistant","error":{"name":"APIError","data":{"message":"boom","statusCode":400}}},"parts":[]}`)
		default:
			b, _ := json.Marshal(map[string]any{
				"info": map[string]string{"role": "assistant", "providerID": in.Model.ProviderID, "finish": "stop"},
				"parts": []any{
					map[string]any{"type": "tool", "tool": "bash", "state": map[string]string{"status": "completed", "output": "ran"}},
					map[string]string{"type": "text", "text": text + " via " + in.Model.ProviderID + "/" + in.Model.ModelID},
				},
			})
			reply(w, string(b))
		}
	})
	mux.HandleFunc("POST /session/ses_fake/{op}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, "true")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		panic(err)
	}
	time.Sleep(200 * time.Millisecond) // not ready at once: Start must poll
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		fmt.Fprintf(logf, "%s %s %s\n", r.Method, r.URL.RequestURI(), strings.TrimSpace(string(body)))
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
}

// assertGone checks that the process whose pid is in file has ended (a
// zombie waiting for init counts as ended).
func assertGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its OpenCode", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool {
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// "pid (comm) S ...": the state follows the last parenthesis.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
	}
	return syscall.Kill(pid, 0) == nil
}

// script writes an executable shell script running body.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "opencode")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

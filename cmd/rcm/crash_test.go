//go:build crash

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/memory"
	bolt "go.etcd.io/bbolt"
)

// Shape of the kill -9 trials: RCM_CRASH_TRIALS (default 100) runs of
// crashSessions concurrent sessions sending calls until the kill.
const crashSessions = 50

// TestKill9UnderLoad builds rcm once, then, trial after trial on the same
// store file, starts `rcm serve` against a fast local upstream, drives
// concurrent rcm-mode sessions, SIGKILLs the server at a random moment and
// checks the file: bbolt's consistency check passes, and every call
// answered more than lossWindow before the kill is in the store.
//
//	go test -tags crash -run TestKill9UnderLoad -v ./cmd/rcm
func TestKill9UnderLoad(t *testing.T) {
	trials := 100
	if v := os.Getenv("RCM_CRASH_TRIALS"); v != "" {
		trials, _ = strconv.Atoi(v)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rcm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	db := filepath.Join(dir, "rcm.db")

	var answered, lost, beyond int
	var lags []time.Duration // answer-to-kill time of each lost call
	for trial := range trials {
		res := crashTrial(t, bin, db, up.URL+"/v1", trial)
		answered += res.answered
		lost += len(res.lost)
		lags = append(lags, res.lost...)
		for _, lag := range res.lost {
			if lag > lossWindow {
				beyond++
				t.Errorf("trial %d: a call answered %v before the kill is not recorded", trial, lag)
			}
		}
	}
	slices.Sort(lags)
	maxLag := time.Duration(0)
	if len(lags) > 0 {
		maxLag = lags[len(lags)-1]
	}
	t.Logf("%d trials, %d sessions each: %d calls answered, %d not recorded (the longest answered %v before the kill), %d beyond the %v promise, 0 corrupt stores",
		trials, crashSessions, answered, lost, maxLag, beyond, lossWindow)
}

type trialResult struct {
	answered int
	lost     []time.Duration
}

func crashTrial(t *testing.T, bin, db, upstream string, trial int) trialResult {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--db", db, "--upstream", upstream, "--mode", "rcm")
	addr, _ := startServe(t, cmd)

	// Each session sends calls one after another, as a harness does, and
	// notes when each answer was read in full.
	var (
		mu    sync.Mutex
		times = make([][]time.Time, crashSessions)
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for s := range crashSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("t%03d-s%02d", trial, s)
			var msgs []string
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"In /work/ws%d step %d of session %s: fix the parser and run go test ./..."}`, s, n, id))
				body := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Session-Id", id)
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				at := time.Now()
				if err != nil || resp.StatusCode != http.StatusOK {
					return
				}
				mu.Lock()
				times[s] = append(times[s], at)
				mu.Unlock()
				msgs = append(msgs, `{"role":"assistant","content":"done"}`)
			}
		}()
	}
	time.Sleep(200*time.Millisecond + rand.N(1300*time.Millisecond))
	mu.Lock() // no answer counts once the kill is decided
	kill := time.Now()
	cmd.Process.Signal(syscall.SIGKILL)
	mu.Unlock()
	cmd.Wait()
	close(stop)
	wg.Wait()

	// 0 corrupt stores: bbolt's own consistency check of every page.
	bdb, err := bolt.Open(db, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("trial %d: reopen after kill -9: %v", trial, err)
	}
	err = bdb.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	bdb.Close()
	if err != nil {
		t.Fatalf("trial %d: store corrupt after kill -9: %v", trial, err)
	}
	st, err := memory.Open(db, memory.Options{})
	if err != nil {
		t.Fatalf("trial %d: open: %v", trial, err)
	}
	defer st.Close()
	var res trialResult
	for s := range crashSessions {
		id := fmt.Sprintf("t%03d-s%02d", trial, s)
		sess, _, err := st.Session(id)
		if err != nil {
			t.Fatalf("trial %d: session %s: %v", trial, id, err)
		}
		if _, err := st.Records(id); err != nil {
			t.Fatalf("trial %d: records of %s: %v", trial, id, err)
		}
		mu.Lock()
		ts := times[s]
		mu.Unlock()
		res.answered += len(ts)
		// A session's calls are sequential, so what is stored is a
		// prefix: the calls past sess.Calls are the lost ones.
		for i := sess.Calls; i < len(ts); i++ {
			res.lost = append(res.lost, kill.Sub(ts[i]))
		}
	}
	if testing.Verbose() && trial%10 == 0 {
		b, _ := json.Marshal(map[string]any{"trial": trial, "answered": res.answered, "lost": len(res.lost)})
		t.Logf("%s", b)
	}
	return res
}

package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/internal/pgtest"
	"github.com/rcm-dev/rcm/memory"
)

// answered is one call of a load: when its answer was read in full and
// which replica served it.
type answered struct {
	session int
	at      time.Time
	replica int
	took    time.Duration
}

// load sends calls of n sessions, each one after the other as a harness
// does, until stop closes. Each call goes to the replica pick names; a
// call a replica cannot take (it is gone) goes to the next one, as a load
// balancer retries. It returns every answered call and every failure on a
// replica that was up.
type load struct {
	mu    sync.Mutex
	calls []answered
	fails []string
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startLoad(id string, n int, addrs []string, pick func() int) *load {
	l := &load{stop: make(chan struct{})}
	client := &http.Client{Timeout: 30 * time.Second}
	for s := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			session := fmt.Sprintf("%s-%02d", id, s)
			var msgs []string
			for k := 0; ; k++ {
				select {
				case <-l.stop:
					return
				default:
				}
				msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"In /work/ws%d step %d: fix the parser and run go test ./..."}`, s, k))
				body := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
				r := pick()
				var lastErr error
				done := false
				for try := 0; try < len(addrs) && !done; try++ {
					start := time.Now()
					req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[(r+try)%len(addrs)]+"/v1/chat/completions", strings.NewReader(body))
					req.Header.Set("X-Session-Id", session)
					resp, err := client.Do(req)
					if err != nil {
						lastErr = err
						continue // that replica is gone: the next one
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil {
						// An answer cut off: its replica died under it
						// (kill -9), as a client retries with the next.
						lastErr = err
						continue
					}
					at := time.Now() // read whole: before a kill that waits for the lock
					l.mu.Lock()
					if resp.StatusCode != http.StatusOK {
						l.fails = append(l.fails, fmt.Sprintf("%s call %d: status %d", session, k, resp.StatusCode))
					} else {
						l.calls = append(l.calls, answered{s, at, (r + try) % len(addrs), at.Sub(start)})
					}
					l.mu.Unlock()
					done = true
				}
				if !done {
					l.mu.Lock()
					l.fails = append(l.fails, fmt.Sprintf("%s call %d: no replica answered: %v", session, k, lastErr))
					l.mu.Unlock()
				}
				msgs = append(msgs, `{"role":"assistant","content":"done"}`)
			}
		}()
	}
	return l
}

func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}

// fastUpstream answers every chat call at once.
func fastUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	return up.URL + "/v1"
}

// storedCalls is each session's call count in the store at dsn, once the
// writes of calls answered have landed (two reads 300 ms apart agree, at
// most 10 s).
func storedCalls(t *testing.T, dsn, id string, n int) []int {
	t.Helper()
	st := openStore(t, dsn)
	defer st.Close()
	last := callsIn(t, st, id, n)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		now := callsIn(t, st, id, n)
		if slices.Equal(now, last) {
			break
		}
		last = now
	}
	return last
}

// readCalls is each session's call count in the store at dsn now.
func readCalls(t *testing.T, dsn, id string, n int) []int {
	t.Helper()
	st := openStore(t, dsn)
	defer st.Close()
	return callsIn(t, st, id, n)
}

func openStore(t *testing.T, dsn string) *memory.Store {
	t.Helper()
	st, err := memory.OpenPostgres(dsn, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// callsIn is the call count of each of the load's n sessions in st.
func callsIn(t *testing.T, st *memory.Store, id string, n int) []int {
	t.Helper()
	out := make([]int, n)
	for s := range n {
		sess, _, err := st.Session(fmt.Sprintf("%s-%02d", id, s))
		if err != nil {
			t.Fatal(err)
		}
		out[s] = sess.Calls
	}
	return out
}

// TestKill9OneReplica: two replicas on one database under 20 sessions'
// load, calls at random to either; one is killed with SIGKILL. The other
// serves every call from then on, and the calls answered but not stored
// are at most the killed replica's writes in flight at the kill (and any
// write a replica reported failed), each session's at most the calls the
// killed replica answered.
func TestKill9OneReplica(t *testing.T) {
	dsn := pgtest.Schema(t)
	upstream := fastUpstream(t)
	const n = 20
	victim, addrA, linesA := serveLogged(t, "--store", dsn, "--upstream", upstream, "--mode", "rcm")
	_, addrB, linesB := serveLogged(t, "--store", dsn, "--upstream", upstream, "--mode", "rcm")
	logA := keepLog(t, "killed replica", linesA)
	logB := keepLog(t, "survivor", linesB)
	l := startLoad("kill", n, []string{addrA, addrB}, func() int { return rand.IntN(2) })
	time.Sleep(1500 * time.Millisecond)
	l.mu.Lock() // no answer counts once the kill is decided
	// The writes the victim has finished (committed or failed), read at
	// the kill: its other answered calls' writes are in flight.
	finished := lagCount(t, addrA)
	unreachable := storeUnreachable(t, addrA)
	kill := time.Now()
	victim.Process.Signal(syscall.SIGKILL)
	l.mu.Unlock()
	victim.Wait()
	time.Sleep(1500 * time.Millisecond)
	l.end()
	for _, f := range l.fails {
		t.Errorf("failed call: %s", f)
	}
	// The writes in flight at the kill are the victim's answers less its
	// finished writes: a count, whatever order a loaded machine finished
	// them in. Their age (1 s at most where the machine has the cores:
	// writes commit within tens of ms of the answer, in about the order of
	// the answers) is reported, not asserted: a timed assertion would
	// fail on a machine others load.
	var byVictim []time.Time
	for _, c := range l.calls {
		if c.replica == 0 {
			byVictim = append(byVictim, c.at)
		}
	}
	slices.SortFunc(byVictim, time.Time.Compare)
	inflight := max(len(byVictim)-finished, 0)
	var age time.Duration
	if inflight > 0 {
		age = kill.Sub(byVictim[len(byVictim)-inflight])
	}
	answeredBy := make([]int, n)
	byA := make([]int, n) // answered by the victim
	afterB := 0
	for _, c := range l.calls {
		answeredBy[c.session]++
		if c.replica == 0 {
			byA[c.session]++
		}
		if c.replica == 1 && c.at.After(kill) {
			afterB++
		}
	}
	if afterB == 0 {
		t.Fatal("the surviving replica served no call after the kill")
	}
	// The survivor's writes of the calls it answered may still be in
	// flight on a loaded machine: wait until it has recorded all of them.
	byB := 0
	for _, c := range l.calls {
		if c.replica == 1 {
			byB++
		}
	}
	for deadline := time.Now().Add(time.Minute); lagCount(t, addrB) < byB; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the survivor recorded %d of the %d calls it answered in a minute", lagCount(t, addrB), byB)
		}
	}
	unreachable += storeUnreachable(t, addrB)
	stored := storedCalls(t, dsn, "kill", n)
	// Besides the kill's, the writes the replicas reported failed are
	// lost (the store could not be reached: counted; any other error:
	// logged with its session), as the README says.
	failed := make([]int, n)
	nfailed := unreachable
	for _, line := range append(logA(), logB()...) {
		if m := failedWrite.FindStringSubmatch(line); m != nil {
			s, _ := strconv.Atoi(m[1])
			if s < n {
				failed[s]++
				nfailed++
			}
		}
	}
	lost, unexplained := 0, 0
	var over []string
	for s := range n {
		missing := answeredBy[s] - stored[s]
		lost += max(missing, 0)
		if d := missing - byA[s] - failed[s]; d > 0 {
			unexplained += d
			over = append(over, fmt.Sprintf("session %d: %d answered calls are not stored, %d were answered by the killed replica and %d writes failed", s, missing, byA[s], failed[s]))
		}
	}
	// A write that found the store unreachable names no session: such
	// writes may be any session's.
	if unexplained > unreachable {
		t.Errorf("%d answered calls are neither the killed replica's nor reported failed (%d writes found the store unreachable):\n%s", unexplained, unreachable, strings.Join(over, "\n"))
	}
	if lost > inflight+nfailed {
		t.Errorf("%d answered calls are not stored, but only %d of the killed replica's writes were in flight and %d failed", lost, inflight, nfailed)
	}
	t.Logf("%d calls answered (%d after the kill, all by the survivor), %d not stored of %d writes in flight at the kill (the oldest answered about %v before it); %d writes failed", len(l.calls), afterB, lost, inflight, age.Round(time.Millisecond), nfailed)
}

// failedWrite is the log line of a call whose store write failed, with
// the load's session number.
var failedWrite = regexp.MustCompile(`msg="store update failed" session=[a-z]+-(\d+)`)

// storeUnreachable is how many calls' writes on the replica at addr found
// the store unreachable (rcm_store_unavailable_total of the write).
func storeUnreachable(t *testing.T, addr string) int {
	t.Helper()
	n, _ := sample(t, addr, `rcm_store_unavailable_total{op="store update failed"}`)
	return n
}

// keepLog keeps the warnings and errors a replica logs, shows them if t
// fails, and returns them: the process's whole log once it has exited,
// else what it logged so far.
func keepLog(t *testing.T, name string, lines <-chan string) func() []string {
	var mu sync.Mutex
	var kept []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for l := range lines {
			if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
				mu.Lock()
				kept = append(kept, l)
				mu.Unlock()
			}
		}
	}()
	get := func() []string {
		select { // a process that has exited closes its log soon after
		case <-done:
		case <-time.After(time.Second):
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(kept)
	}
	t.Cleanup(func() {
		if t.Failed() {
			got := get()
			t.Logf("%s logged %d warnings and errors:\n%s", name, len(got), strings.Join(got, "\n"))
		}
	})
	return get
}

// lagCount is how many calls' writes the replica at addr has finished
// (rcm_store_lag_seconds_count on /rcm/metrics): committed or failed.
func lagCount(t *testing.T, addr string) int {
	t.Helper()
	n, ok := sample(t, addr, "rcm_store_lag_seconds_count")
	if !ok {
		t.Fatalf("%s: no rcm_store_lag_seconds_count", addr)
	}
	return n
}

// sample reads the integer value of one sample (a metric's name and
// labels, as the exposition writes them) on the /rcm/metrics of addr.
func sample(t *testing.T, addr, name string) (int, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/rcm/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	v := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindSubmatch(m)
	if v == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(string(v[1]))
	return n, true
}

// privatePostgres starts a PostgreSQL server of the test's own (initdb in
// a temporary folder, a free port), which the test may stop and start;
// it skips without the server's binaries. It returns the database URL
// and the server's pg_ctl runner.
func privatePostgres(t *testing.T) (dsn string, ctl func(args ...string)) {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	pgctl, err := exec.LookPath("pg_ctl")
	if err != nil && len(bins) == 0 {
		t.Skip("no pg_ctl to run a PostgreSQL server of the test's own")
	}
	if err != nil {
		pgctl = bins[len(bins)-1]
	}
	initdb := filepath.Join(filepath.Dir(pgctl), "initdb")
	dir, err := os.MkdirTemp("", "rcm-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The server refuses to run as root: run it as postgres then.
	run := func(bin string, args ...string) *exec.Cmd { return exec.Command(bin, args...) }
	if os.Getuid() == 0 {
		if err := exec.Command("chown", "postgres", dir).Run(); err != nil {
			t.Skipf("running as root and cannot hand %s to postgres: %v", dir, err)
		}
		run = func(bin string, args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	data := filepath.Join(dir, "data")
	if out, err := run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-N").CombinedOutput(); err != nil {
		t.Skipf("initdb: %v\n%s", err, out)
	}
	ctl = func(args ...string) {
		t.Helper()
		full := append([]string{"-D", data, "-w", "-o", "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1", "-l", filepath.Join(dir, "log")}, args...)
		if out, err := run(pgctl, full...).CombinedOutput(); err != nil {
			t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
		}
	}
	ctl("start")
	t.Cleanup(func() { run(pgctl, "-D", data, "-m", "immediate", "stop").Run() })
	return "postgres://postgres@127.0.0.1:" + port + "/postgres", ctl
}

// TestPostgresRestartUnderLoad: PostgreSQL stopped and started again while
// two replicas serve 20 sessions: every call is answered throughout (while
// the store is down, routed on nothing, X-RCM-Fallback: error at worst),
// none waits more than a bounded time, writes resume once it is back, and
// no write committed before the stop is lost.
func TestPostgresRestartUnderLoad(t *testing.T) {
	dsn, ctl := privatePostgres(t)
	upstream := fastUpstream(t)
	const n = 20
	_, a, linesA := serveLogged(t, "--store", dsn, "--upstream", upstream, "--mode", "rcm")
	_, b, linesB := serveLogged(t, "--store", dsn, "--upstream", upstream, "--mode", "rcm")
	keepLog(t, "replica a", linesA)
	keepLog(t, "replica b", linesB)
	l := startLoad("restart", n, []string{a, b}, func() int { return rand.IntN(2) })
	time.Sleep(time.Second)
	// What had committed just before the stop (writes that commit in
	// between only add to it).
	committed := readCalls(t, dsn, "restart", n)
	l.mu.Lock()
	before := len(l.calls)
	l.mu.Unlock()
	ctl("-m", "fast", "stop")
	down := time.Now()
	time.Sleep(2 * time.Second)
	ctl("start")
	up := time.Now()
	l.mu.Lock()
	during := len(l.calls) - before
	l.mu.Unlock()
	time.Sleep(3 * time.Second)
	l.end()
	for _, f := range l.fails {
		t.Errorf("failed call: %s", f)
	}
	if during == 0 {
		t.Error("no call was answered while PostgreSQL was down")
	}
	var slowest time.Duration
	after := 0
	for _, c := range l.calls {
		if c.at.After(up) {
			after++
		}
		slowest = max(slowest, c.took)
	}
	// A call waits at most the store's bounds: the claim and the read
	// (2 s each), the connect timeout.
	if slowest > 5*time.Second {
		t.Errorf("a call took %v", slowest)
	}
	stored := storedCalls(t, dsn, "restart", n)
	resumed, kept := 0, 0
	for s := range n {
		if stored[s] < committed[s] {
			t.Errorf("session %d: %d calls stored, %d had committed before the stop", s, stored[s], committed[s])
		}
		resumed += stored[s]
		kept += committed[s]
	}
	total := len(l.calls)
	if resumed <= kept {
		t.Errorf("writes did not resume: %d calls stored, %d before the stop", resumed, kept)
	}
	t.Logf("%d calls answered: %d before the stop (%d stored then), %d while down (%v), %d after the start; %d stored; slowest call %v",
		total, before, kept, during, up.Sub(down).Round(time.Millisecond), after, resumed, slowest.Round(time.Millisecond))
}

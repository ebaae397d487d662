package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar shows a Progress: a redrawn bar with an ETA on a terminal, plain
// lines at every tenth of the way otherwise (logs, CI). Its Update fits
// replay.Options.Progress and run.Options.Progress.
type Bar struct {
	w      io.Writer
	labels Labels
	tty    bool
	last   time.Time
	step   int  // tenths printed (plain lines)
	end    bool // the final line is printed
	now    func() time.Time
}

// Labels name what a Bar counts: its plain lines read
// "NAME:  40%  12/30 CALLS  1/5 SESSIONS  ETA 9s".
type Labels struct {
	Name     string
	Calls    string // what Progress.Calls counts
	Sessions string // what Progress.Sessions counts
}

// The labels of a replay (Replay's Progress) and of a real run (Run's:
// Calls counts requests, Sessions finished runs).
var (
	ReplayLabels = Labels{Name: "replay", Calls: "calls", Sessions: "sessions"}
	RunLabels    = Labels{Name: "run", Calls: "requests", Sessions: "runs"}
)

// NewBar writes to w, as a bar when w is a terminal.
func NewBar(w io.Writer, l Labels) *Bar {
	f, ok := w.(*os.File)
	return &Bar{w: w, labels: l, tty: ok && IsTerminal(f), now: time.Now}
}

// IsTerminal reports whether f is a character device (a terminal), without
// a dependency.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Update shows p.
func (b *Bar) Update(p Progress) {
	now := b.now()
	frac := 0.0
	if p.TotalCalls > 0 {
		frac = float64(p.Calls) / float64(p.TotalCalls)
	}
	eta := "?"
	if el := now.Sub(p.Started); p.Calls > 0 {
		eta = (time.Duration(float64(el)/frac) - el).Round(time.Second).String()
	}
	if b.tty {
		if now.Sub(b.last) < 100*time.Millisecond && p.Calls < p.TotalCalls {
			return
		}
		b.last = now
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(b.w, "\r[%s%s] %3.0f%%  %s  ETA %s   ",
			strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, b.counts(p), eta)
		return
	}
	last := p.Calls == p.TotalCalls && p.Sessions == p.TotalSessions
	if t := int(frac * 10); t > b.step || (last && !b.end) {
		b.step, b.end = t, last
		fmt.Fprintf(b.w, "%s: %3.0f%%  %s  ETA %s\n", b.labels.Name, frac*100, b.counts(p), eta)
	}
}

func (b *Bar) counts(p Progress) string {
	return fmt.Sprintf("%d/%d %s  %d/%d %s", p.Calls, p.TotalCalls, b.labels.Calls, p.Sessions, p.TotalSessions, b.labels.Sessions)
}

// Done ends the bar's line on a terminal.
func (b *Bar) Done() {
	if b.tty {
		fmt.Fprintln(b.w)
	}
}

// tracker counts a replay's or a run's Progress and tells its callback.
type Tracker struct {
	mu   sync.Mutex
	prog Progress
	tell func(Progress) // may be nil
}

func NewTracker(calls, sessions int, tell func(Progress)) *Tracker {
	return &Tracker{prog: Progress{TotalCalls: calls, TotalSessions: sessions, Started: time.Now()}, tell: tell}
}

// add counts finished calls and sessions and tells the callback.
func (t *Tracker) Add(calls, sessions int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prog.Calls += calls
	t.prog.Sessions += sessions
	if t.tell != nil {
		t.tell(t.prog)
	}
}

// parallel calls fn(0) .. fn(n-1) on workers goroutines and stops handing
// out indexes when ctx ends; it returns once the calls under way are done.
func Parallel(ctx context.Context, workers, n int, fn func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				fn(i)
			}
		})
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}

// Progress reports how far a replay is.
type Progress struct {
	Calls, TotalCalls       int
	Sessions, TotalSessions int // sessions whose every unit finished
	Started                 time.Time
}

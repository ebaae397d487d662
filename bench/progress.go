package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar shows a replay's Progress: a redrawn bar with an ETA on a terminal,
// plain lines at every tenth of the way otherwise (logs, CI). Its Update
// fits Options.Progress.
type Bar struct {
	w    io.Writer
	tty  bool
	last time.Time
	step int  // tenths printed (plain lines)
	end  bool // the final line is printed
	now  func() time.Time
}

// NewBar writes to f, as a bar when f is a terminal.
func NewBar(f *os.File) *Bar {
	return &Bar{w: f, tty: IsTerminal(f), now: time.Now}
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
		fmt.Fprintf(b.w, "\r[%s%s] %3.0f%%  %d/%d calls  %d/%d sessions  ETA %s   ",
			strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100,
			p.Calls, p.TotalCalls, p.Sessions, p.TotalSessions, eta)
		return
	}
	last := p.Calls == p.TotalCalls && p.Sessions == p.TotalSessions
	if t := int(frac * 10); t > b.step || (last && !b.end) {
		b.step, b.end = t, last
		fmt.Fprintf(b.w, "replay: %3.0f%%  %d/%d calls  %d/%d sessions  ETA %s\n",
			frac*100, p.Calls, p.TotalCalls, p.Sessions, p.TotalSessions, eta)
	}
}

// Done ends the bar's line on a terminal.
func (b *Bar) Done() {
	if b.tty {
		fmt.Fprintln(b.w)
	}
}

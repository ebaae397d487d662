package memory

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// hugeBody is a chat body of n small messages (alternating user requests
// and assistant answers) after a system prompt: 300k of them make the
// 12 MB body of issue 11.
func hugeBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[{"role":"system","content":"You are opencode."}`)
	for i := range n {
		if i%2 == 0 {
			fmt.Fprintf(&b, `,{"role":"user","content":"step %d: fix the parser"}`, i/2)
		} else {
			fmt.Fprintf(&b, `,{"role":"assistant","content":"done %d"}`, i/2)
		}
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkWriterLag measures how long other sessions' small writes (a
// call's Touch, event and record update) wait while one session's call of
// 300k messages is written: its labels for every turn and its record
// observed from the whole transcript, as the proxy writes them. It reports
// the time of reading the call into the record (outside the writer lock),
// of the huge call's writes (labels in chunks, then the call's own
// transaction), and the other writes' p50, p99 and max latency.
func BenchmarkWriterLag(b *testing.B) {
	body := hugeBody(300_000)
	tr, err := transcript.Parse(transcript.OpenAIChat, body, transcript.Hints{})
	if err != nil {
		b.Fatal(err)
	}
	fps := tr.Fingerprints()
	labels := make([]Label, len(fps))
	for i := range labels {
		labels[i] = Label{Task: "t1", Confidence: 1, Method: "lexical", Routed: true}
	}
	o := Observation{Transcript: tr, Turns: allTurns(tr), Status: 200}
	b.SetBytes(int64(len(body)))
	var lags []time.Duration
	var huge, read time.Duration
	for i := 0; b.Loop(); i++ {
		s := openTest(b, Options{})
		stop := make(chan struct{})
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("small%d", g)
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					err := s.Update(func(w *Tx) error {
						if err := w.Touch(id, "", start); err != nil {
							return err
						}
						if err := w.AppendEvent(id, &Event{At: start, Kind: "agent", Task: "t1"}); err != nil {
							return err
						}
						return w.UpdateRecord(id, "t1", func(r *Record) error {
							r.Progress = []string{fmt.Sprint(n)}
							return nil
						})
					})
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					lags = append(lags, time.Since(start))
					mu.Unlock()
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		// As the proxy does: the call is read into the record outside
		// the write transaction, which then puts labels and record.
		start := time.Now()
		var rec Record
		rec.Observe(o)
		read += time.Since(start)
		start = time.Now()
		// Labels beyond the last chunk go first, a chunk per transaction,
		// as proxy's saveEarlyLabels writes them (labelChunk = 4096).
		const chunk = 4096
		from := 0
		for ; len(fps)-from > chunk; from += chunk {
			if err := s.Update(func(w *Tx) error {
				return w.PutLabels("huge", fps[from:from+chunk], labels[from:from+chunk])
			}); err != nil {
				b.Fatal(err)
			}
		}
		err := s.Update(func(w *Tx) error {
			if err := w.PutLabels("huge", fps[from:], labels[from:]); err != nil {
				return err
			}
			return w.UpdateRecord("huge", "t1", func(r *Record) error {
				*r = rec
				return nil
			})
		})
		huge += time.Since(start)
		time.Sleep(20 * time.Millisecond)
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	slices.Sort(lags)
	q := func(p float64) float64 { return float64(lags[int(p*float64(len(lags)-1))]) / 1e6 }
	b.ReportMetric(float64(read)/float64(b.N)/1e6, "observe-ms")
	b.ReportMetric(float64(huge)/float64(b.N)/1e6, "huge-write-ms")
	b.ReportMetric(q(0.5), "other-p50-ms")
	b.ReportMetric(q(0.99), "other-p99-ms")
	b.ReportMetric(q(1), "other-max-ms")
}

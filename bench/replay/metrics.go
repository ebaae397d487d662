package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/bench/stat"
	"github.com/rcm-dev/rcm/internal/chat"
	"github.com/tidwall/gjson"
)

// Forwarded is one message of a forwarded body, decoded: what a model reads.
type Forwarded struct {
	Role string
	// Text is the decoded content (text parts joined by newlines when the
	// content is an array), then each tool call's name and arguments.
	Text string
	// Key identifies the message for matching against the harness's history
	// (see messageKey).
	Key string
	// Bytes is the size of the message's JSON in the forwarded body.
	Bytes int
}

// parseForwarded decodes the messages array of a chat-completions body (or
// of a Messages body the bench built, see anthropicMessage). JSON
// escapes are undone, so a request text compares verbatim however the proxy
// escaped it ("\u003c" or "<"). A body without messages is read as the
// Responses API's input items (see parseItems).
func parseForwarded(body []byte) []Forwarded {
	if msgs := gjson.GetBytes(body, "messages"); msgs.Exists() {
		return parseMessages(msgs, nil)
	}
	return parseItems(gjson.GetBytes(body, "input"), nil)
}

// parseMessages decodes a messages array. A message whose JSON is byte for
// byte a key of known is that message, already decoded: a proxy forwards
// most of the harness's messages unchanged, and the replay knows what it
// sent.
func parseMessages(msgs gjson.Result, known map[string]Forwarded) []Forwarded {
	var out []Forwarded
	msgs.ForEach(func(_, m gjson.Result) bool {
		if f, ok := known[m.Raw]; ok {
			out = append(out, f)
			return true
		}
		msg := forwardedMessage(m)
		f := Forwarded{Role: msg.Role, Bytes: len(m.Raw)}
		f.Key = messageKey(msg)
		f.Text = messageText(msg)
		out = append(out, f)
		return true
	})
	return out
}

// messageKey identifies a message by everything a model reads of it: two
// messages with equal keys are the same message, wherever they come from.
func messageKey(m chat.Message) string {
	var b strings.Builder
	b.WriteString(m.Role)
	b.WriteByte(0)
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteByte(0)
		b.WriteString(c.ID)
		b.WriteByte(1)
		b.WriteString(c.Function.Name)
		b.WriteByte(1)
		b.WriteString(c.Function.Arguments)
	}
	b.WriteByte(0)
	b.WriteString(m.ToolCallID)
	return b.String()
}

// messageText is the text of a message that requirements are searched in.
func messageText(m chat.Message) string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteByte('\n')
		b.WriteString(c.Function.Name)
		b.WriteByte(' ')
		b.WriteString(c.Function.Arguments)
	}
	return b.String()
}

// recallOf returns the share of requests found verbatim in the text of some
// forwarded message (1 when there are none to find).
func recallOf(requests []string, fwd []Forwarded) float64 {
	if len(requests) == 0 {
		return 1
	}
	found := 0
	for _, r := range requests {
		if slices.ContainsFunc(fwd, func(f Forwarded) bool { return strings.Contains(f.Text, r) }) {
			found++
		}
	}
	return float64(found) / float64(len(requests))
}

// History is the harness's history of one call with the ground truth of
// each message: what forwarded messages are attributed against.
type History struct {
	Messages []chat.Message
	// Owner is the task each message belongs to; "" for the system prompt.
	Owner []string
	// Checkout maps each task of the session to its checkout path, used to
	// attribute messages the proxy wrote itself (state records, summaries).
	Checkout map[string]string
	// Requests maps each task to its request texts as sent so far.
	Requests map[string][]string

	keys []string // messageKey of each message, when the replay knows them
}

// Attribute names the task each forwarded message belongs to. A message
// equal to a history message takes that message's owner; equal messages
// are matched in order (the first unused one after the previous match, so
// repeated texts such as "OK" stay with their own task when the proxy keeps
// the order). A message that equals none (a state record or summary the
// proxy inserted, a rewritten message) belongs to the task whose requests it
// quotes, else to the task whose checkout path it names most often; with no
// such evidence, or a tie, it is unattributed (""). The system prompt's
// owner is "" too.
func (h *History) Attribute(fwd []Forwarded) []string {
	at := map[string][]int{}
	for i, m := range h.Messages {
		var k string
		if i < len(h.keys) {
			k = h.keys[i]
		} else {
			k = messageKey(m)
		}
		at[k] = append(at[k], i)
	}
	owners := make([]string, len(fwd))
	used := make([]bool, len(h.Messages))
	last := -1
	for i, f := range fwd {
		idx := at[f.Key]
		j := slices.IndexFunc(idx, func(p int) bool { return p > last && !used[p] })
		if j < 0 {
			j = slices.IndexFunc(idx, func(p int) bool { return !used[p] })
		}
		if j < 0 && len(idx) > 0 {
			j = 0 // a message sent twice: still its task's
		}
		if j >= 0 {
			p := idx[j]
			used[p], last = true, p
			owners[i] = h.Owner[p]
			continue
		}
		owners[i] = h.byContent(f.Text)
	}
	return owners
}

// byContent attributes a message the history does not hold.
func (h *History) byContent(text string) string {
	best, score, tie := "", 0, false
	for _, task := range sortedKeys(h.Checkout) {
		s := 0
		for _, r := range h.Requests[task] {
			if strings.Contains(text, r) {
				s += 1000
			}
		}
		s += strings.Count(text, h.Checkout[task])
		switch {
		case s > score:
			best, score, tie = task, s, false
		case s == score && s > 0:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// contaminationOf returns the share of forwarded message bytes (tokens are
// estimated as bytes/4, so the share is the same) that belong to tasks other
// than focus. The system prompt and unattributed messages are not
// contamination.
func contaminationOf(fwd []Forwarded, owners []string, focus string) float64 {
	total, other := 0, 0
	for i, f := range fwd {
		total += f.Bytes
		if owners[i] != "" && owners[i] != focus {
			other += f.Bytes
		}
	}
	if total == 0 {
		return 0
	}
	return float64(other) / float64(total)
}

// prefixStability returns the share of cur that repeats prev from the start:
// the longest common prefix over len(cur), what a provider's prompt cache
// can reuse from the previous call.
func prefixStability(prev, cur []byte) float64 {
	if len(cur) == 0 {
		return 1
	}
	n := min(len(prev), len(cur))
	i := 0
	for i < n && prev[i] == cur[i] {
		i++
	}
	return float64(i) / float64(len(cur))
}

// tokensOf estimates tokens as bytes/4, rounded up, as the proxy does.
func tokensOf(bytes int) int { return (bytes + 3) / 4 }

// Decision is one routing decision and whether it was right.
type Decision struct {
	Confidence float64
	Correct    bool
	Routed     bool // forwarded routed, not a fallback
}

// routedRight returns the share of routed decisions (not fallbacks) that
// were right, and how many there were; NaN without any.
func routedRight(ds []Decision) (float64, int) {
	n, right := 0, 0
	for _, d := range ds {
		if d.Routed {
			n++
			if d.Correct {
				right++
			}
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return float64(right) / float64(n), n
}

// Bin is one row of a reliability table.
type Bin struct {
	Lo         float64  `json:"lo"`
	Hi         float64  `json:"hi"`
	N          int      `json:"n"`
	Confidence stat.Num `json:"confidence"` // mean confidence in the bin
	Accuracy   stat.Num `json:"accuracy"`
}

// calibrate returns the reliability table over bins equal-width confidence
// bins (a confidence of 1 falls in the last) and the expected calibration
// error: the mean over decisions of |accuracy - confidence| of their bin.
// Empty bins are left out of the table. ECE is NaN without decisions.
func calibrate(ds []Decision, bins int) ([]Bin, float64) {
	table := make([]Bin, bins)
	for i := range table {
		table[i].Lo, table[i].Hi = float64(i)/float64(bins), float64(i+1)/float64(bins)
	}
	for _, d := range ds {
		i := min(max(int(d.Confidence*float64(bins)), 0), bins-1)
		table[i].N++
		table[i].Confidence += stat.Num(d.Confidence)
		if d.Correct {
			table[i].Accuracy++
		}
	}
	var out []Bin
	ece := 0.0
	for _, b := range table {
		if b.N == 0 {
			continue
		}
		b.Confidence /= stat.Num(b.N)
		b.Accuracy /= stat.Num(b.N)
		ece += float64(b.N) * math.Abs(float64(b.Accuracy-b.Confidence))
		out = append(out, b)
	}
	if len(ds) == 0 {
		return out, math.NaN()
	}
	return out, ece / float64(len(ds))
}

// mapTasks maps the proxy's task ids (X-RCM-Task) to ground-truth tasks:
// pairs are taken by decreasing co-occurrence count, each proxy id and each
// true task at most once (a greedy one-to-one majority match), so a router
// that splits one task into several ids, or merges several tasks into one,
// is charged for it. got, truth and routed are parallel; empty got entries
// (no decision) are ignored.
//
// The routed calls are matched first, and the fallbacks only map the ids
// and tasks left over: a fallback forwards everything, and its id is a
// guess. Matched on every call, a long fallen-back task guessed under
// another task's id took that id, and the calls routed to it, each on the
// task whose turns it forwarded, counted as misrouted (in the bench's
// untitled layout every one of its 96 misrouted calls was such a call).
func mapTasks(got, truth []string, routed []bool) map[string]string {
	m, taken := map[string]string{}, map[string]bool{}
	matchTasks(got, truth, m, taken, func(i int) bool { return routed[i] })
	matchTasks(got, truth, m, taken, func(int) bool { return true })
	return m
}

// matchTasks adds to m the greedy majority match of the entries that use
// admits, over the ids m lacks and the tasks not taken.
func matchTasks(got, truth []string, m map[string]string, taken map[string]bool, use func(int) bool) {
	type pair struct {
		got, truth string
		n          int
	}
	count := map[[2]string]int{}
	for i, g := range got {
		if _, ok := m[g]; g != "" && !ok && !taken[truth[i]] && use(i) {
			count[[2]string{g, truth[i]}]++
		}
	}
	pairs := make([]pair, 0, len(count))
	for k, n := range count {
		pairs = append(pairs, pair{k[0], k[1], n})
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.got, b.got), cmp.Compare(a.truth, b.truth))
	})
	for _, p := range pairs {
		if _, ok := m[p.got]; ok || taken[p.truth] {
			continue
		}
		m[p.got], taken[p.truth] = p.truth, true
	}
}

// FalseSwitches counts, on a single-task schedule (S_base), the routed
// calls whose task differs from the task of the schedule's first routed
// call: every one of them is a switch that did not happen.
type FalseSwitches struct {
	Count  int      `json:"count"`
	Routed int      `json:"routed"` // routed calls (not a fallback), the rate's denominator
	Rate   stat.Num `json:"rate"`   // Count / Routed; null with no routed call
}

// countFalseSwitches counts false switches in a single-task schedule's
// decisions: tasks[i] is call i's routed task (X-RCM-Task), "" when the
// call was not routed (a fallback or no decision).
func countFalseSwitches(tasks []string) FalseSwitches {
	var fs FalseSwitches
	first := ""
	for _, t := range tasks {
		if t == "" {
			continue
		}
		fs.Routed++
		if first == "" {
			first = t
		} else if t != first {
			fs.Count++
		}
	}
	fs.rate()
	return fs
}

func (fs *FalseSwitches) rate() {
	fs.Rate = stat.Num(math.NaN())
	if fs.Routed > 0 {
		fs.Rate = stat.Num(float64(fs.Count) / float64(fs.Routed))
	}
}

// falseSwitchesOf pools sessions' false switches: counts summed, the rate
// over the summed routed calls.
func falseSwitchesOf(rs []*SessionResult) FalseSwitches {
	var fs FalseSwitches
	for _, r := range rs {
		fs.Count += r.FalseSwitches.Count
		fs.Routed += r.FalseSwitches.Routed
	}
	fs.rate()
	return fs
}

// String is the rate with the count over the routed calls: "0.050 (2/40)".
func (fs FalseSwitches) String() string {
	return fmt.Sprintf("%s (%d/%d)", stat.F3(fs.Rate), fs.Count, fs.Routed)
}

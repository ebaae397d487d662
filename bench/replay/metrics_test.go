package replay

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/rcm-dev/rcm/bench/spec"
	"github.com/rcm-dev/rcm/bench/stat"
	"github.com/rcm-dev/rcm/internal/chat"
)

func TestRecallDecodesEscapes(t *testing.T) {
	// The proxy may escape <, > and & (Go's encoding/json does) or not;
	// requests compare against the decoded text either way.
	body := []byte(`{"messages":[` +
		`{"role":"system","content":"sys"},` +
		`{"role":"user","content":"fix the \u003cparser\u003e \u0026 \"quoted\" names"},` +
		`{"role":"user","content":[{"type":"text","text":"Task t1 state (rcm memory)\nkeep\nempty input"}]},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"grep <x>\"}"}}]}]}`)
	fwd := parseForwarded(body)
	if len(fwd) != 4 {
		t.Fatalf("%d messages", len(fwd))
	}
	tests := []struct {
		name     string
		requests []string
		want     float64
	}{
		{"none to find", nil, 1},
		{"escaped quotes and angle brackets", []string{`fix the <parser> & "quoted" names`}, 1},
		{"in a content array", []string{"keep\nempty input"}, 1},
		{"in tool-call arguments", []string{`{"command":"grep <x>"}`}, 1},
		{"one of two missing", []string{`fix the <parser>`, "never sent"}, 0.5},
		{"escaped form is not the text", []string{`\u003cparser\u003e`}, 0},
		{"not across messages", []string{"names\nTask t1"}, 0},
	}
	for _, tc := range tests {
		if got := recallOf(tc.requests, fwd); got != tc.want {
			t.Errorf("%s: recall %v, want %v", tc.name, got, tc.want)
		}
	}
}

// history builds a History from (owner, message) pairs.
func history(pairs ...any) *History {
	h := &History{
		Checkout: map[string]string{"A": "/work/ws1", "B": "/work/ws2", "C": "/work/ws3"},
		Requests: map[string][]string{},
	}
	for i := 0; i < len(pairs); i += 2 {
		owner, m := pairs[i].(string), pairs[i+1].(chat.Message)
		h.Owner = append(h.Owner, owner)
		h.Messages = append(h.Messages, m)
		if m.Role == chat.RoleUser && owner != "" {
			h.Requests[owner] = append(h.Requests[owner], m.Content)
		}
	}
	return h
}

func fwdOf(t *testing.T, ms ...chat.Message) []Forwarded {
	t.Helper()
	var b []byte
	b = append(b, `{"messages":[`...)
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		j, err := marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, j...)
	}
	return parseForwarded(append(b, "]}"...))
}

func TestAttributeAndContamination(t *testing.T) {
	sys := chat.Message{Role: chat.RoleSystem, Content: "system prompt"}
	reqA := chat.Message{Role: chat.RoleUser, Content: "In /work/ws1 fix A"}
	callA := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}}}}
	okA := chat.Message{Role: chat.RoleTool, ToolCallID: "c1", Content: "OK"}
	reqB := chat.Message{Role: chat.RoleUser, Content: "In /work/ws2 fix B"}
	callB := callA // the same call id and command in another task
	okB := okA
	reqA2 := chat.Message{Role: chat.RoleUser, Content: "More on A"}
	h := history("", sys, "A", reqA, "A", callA, "A", okA, "B", reqB, "B", callB, "B", okB, "A", reqA2)

	memoryB := chat.Message{Role: chat.RoleUser, Content: "Task B state (rcm memory)\nRequirements:\nIn /work/ws2 fix B"}
	memoryA := chat.Message{Role: chat.RoleUser, Content: "Task A state (rcm memory)\nWorkspace: /work/ws1 (files /work/ws1/a.py)"}
	summary := chat.Message{Role: chat.RoleAssistant, Content: "worked in /work/ws1 and /work/ws2"}
	tests := []struct {
		name  string
		fwd   []chat.Message
		want  []string
		contA float64 // contamination with focus A, computed from the sizes below
	}{
		{"native: everything in order", []chat.Message{sys, reqA, callA, okA, reqB, callB, okB, reqA2},
			[]string{"", "A", "A", "A", "B", "B", "B", "A"}, -1},
		{"routed: repeated messages keep their own task", []chat.Message{sys, reqA, callA, okA, reqA2},
			[]string{"", "A", "A", "A", "A"}, 0},
		{"the other task's repeats after its request", []chat.Message{sys, reqB, callB, okB},
			[]string{"", "B", "B", "B"}, -1},
		{"inserted records: by quoted request, then by checkout", []chat.Message{sys, memoryA, memoryB, reqA2},
			[]string{"", "A", "B", "A"}, -1},
		{"a tie is unattributed", []chat.Message{sys, summary}, []string{"", ""}, 0},
	}
	for _, tc := range tests {
		fwd := fwdOf(t, tc.fwd...)
		got := h.Attribute(fwd)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: owners %q, want %q", tc.name, got, tc.want)
			continue
		}
		total, other := 0, 0
		for i, f := range fwd {
			total += f.Bytes
			if tc.want[i] == "B" {
				other += f.Bytes
			}
		}
		want := float64(other) / float64(total)
		if tc.contA == 0 && want != 0 {
			t.Fatalf("%s: test expects no contamination", tc.name)
		}
		if c := contaminationOf(fwd, got, "A"); math.Abs(c-want) > 1e-12 {
			t.Errorf("%s: contamination %v, want %v", tc.name, c, want)
		}
	}
	if c := contaminationOf(nil, nil, "A"); c != 0 {
		t.Errorf("empty: %v", c)
	}
}

func TestPrefixStability(t *testing.T) {
	tests := []struct {
		prev, cur string
		want      float64
	}{
		{`[1,2]`, `[1,2,3]`, 4.0 / 7},
		{`[1,2,3]`, `[1,2,3]`, 1},
		{`[9]`, `[1,2]`, 1.0 / 5},
		{``, `[1]`, 0},
		{`[1,2,3,4]`, `[1,2]`, 4.0 / 5},
		{`x`, ``, 1},
	}
	for _, tc := range tests {
		if got := prefixStability([]byte(tc.prev), []byte(tc.cur)); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PrefixStability(%q, %q) = %v, want %v", tc.prev, tc.cur, got, tc.want)
		}
	}
}

func TestCalibrate(t *testing.T) {
	ds := []Decision{
		{0.95, true, true}, {0.95, true, true}, {0.95, false, true}, {1.0, true, true}, // bin 0.9-1.0: conf 0.9625, acc 0.75
		{0.55, true, false}, {0.45, false, false}, // bins 0.5 and 0.4, fallbacks
	}
	if rr, n := routedRight(ds); n != 4 || rr != 0.75 {
		t.Errorf("routed right %v of %d, want 0.75 of 4", rr, n)
	}
	if rr, n := routedRight(ds[4:]); n != 0 || !math.IsNaN(rr) {
		t.Errorf("routed right without routed decisions: %v of %d", rr, n)
	}
	bins, ece := calibrate(ds, 10)
	if len(bins) != 3 || bins[0].Lo != 0.4 || bins[1].Lo != 0.5 || bins[2].Lo != 0.9 || bins[2].N != 4 {
		t.Fatalf("bins %+v", bins)
	}
	if math.Abs(float64(bins[2].Confidence)-0.9625) > 1e-12 || bins[2].Accuracy != 0.75 {
		t.Errorf("top bin %+v", bins[2])
	}
	want := (4*math.Abs(0.75-0.9625) + 1*math.Abs(1-0.55) + 1*math.Abs(0-0.45)) / 6
	if math.Abs(ece-want) > 1e-12 {
		t.Errorf("ECE %v, want %v", ece, want)
	}
	if _, ece := calibrate(nil, 10); !math.IsNaN(ece) {
		t.Errorf("ECE of nothing %v, want NaN", ece)
	}
	if _, ece := calibrate([]Decision{{Confidence: 1, Correct: true}, {Confidence: 0}}, 10); ece != 0 {
		t.Errorf("perfect calibration: ECE %v", ece)
	}
}

func TestMapTasks(t *testing.T) {
	tests := []struct {
		name        string
		got, truth  []string
		fellBack    []int // indexes of fallbacks; the rest are routed
		want        map[string]string
		wantCorrect int
	}{
		{"renamed ids", []string{"t1", "t1", "t2", "t1"}, []string{"A", "A", "B", "A"}, nil,
			map[string]string{"t1": "A", "t2": "B"}, 4},
		{"a split task: the smaller part maps to nothing", []string{"t1", "t2", "t2", "t3"}, []string{"A", "A", "A", "B"}, nil,
			map[string]string{"t2": "A", "t3": "B"}, 3},
		{"merged tasks: one id gets the majority only", []string{"t1", "t1", "t1", ""}, []string{"A", "A", "B", "B"}, nil,
			map[string]string{"t1": "A"}, 2},
		// A routed to t1, then B fell back three times guessed as t1: t1
		// is A's, whose calls it forwarded; matched on every call it was B's.
		{"fallback guesses do not take a routed id", []string{"t1", "t1", "t1", "t1", "t1"}, []string{"A", "A", "B", "B", "B"}, []int{2, 3, 4},
			map[string]string{"t1": "A"}, 2},
		{"an id only fallbacks used maps to a task left over", []string{"t1", "t1", "t2", "t2", "t1"}, []string{"A", "A", "B", "B", "A"}, []int{2, 3},
			map[string]string{"t1": "A", "t2": "B"}, 5},
		{"all fallbacks: matched on every call", []string{"t1", "t1", "t2"}, []string{"A", "A", "B"}, []int{0, 1, 2},
			map[string]string{"t1": "A", "t2": "B"}, 3},
	}
	for _, tc := range tests {
		routed := make([]bool, len(tc.got))
		for i := range routed {
			routed[i] = !slices.Contains(tc.fellBack, i)
		}
		m := mapTasks(tc.got, tc.truth, routed)
		if !reflect.DeepEqual(m, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, m, tc.want)
		}
		n := 0
		for i, g := range tc.got {
			if g != "" && m[g] == tc.truth[i] {
				n++
			}
		}
		if n != tc.wantCorrect {
			t.Errorf("%s: %d correct, want %d", tc.name, n, tc.wantCorrect)
		}
	}
}

func TestMeanCIAndPercentile(t *testing.T) {
	m, lo, hi := stat.MeanCI([]float64{1, 2, 3, 4})
	// sd = 1.2910, se = 0.6455, t(3) = 3.182
	if m != 2.5 || math.Abs(hi-m-3.182*math.Sqrt(5.0/3/4)) > 1e-9 || math.Abs((m-lo)-(hi-m)) > 1e-12 {
		t.Errorf("MeanCI = %v [%v, %v]", m, lo, hi)
	}
	if m, lo, hi := stat.MeanCI([]float64{0.7}); m != 0.7 || lo != 0.7 || hi != 0.7 {
		t.Errorf("one value: %v [%v, %v]", m, lo, hi)
	}
	if m, _, _ := stat.MeanCI(nil); !math.IsNaN(m) {
		t.Errorf("no values: %v", m)
	}
	xs := []float64{5, 1, 4, 2, 3}
	if p := stat.Percentile(xs, 50); p != 3 {
		t.Errorf("p50 %v", p)
	}
	if p := stat.Percentile(xs, 95); math.Abs(p-4.8) > 1e-12 {
		t.Errorf("p95 %v", p)
	}
	if p := stat.Percentile(nil, 50); !math.IsNaN(p) {
		t.Errorf("p50 of nothing %v", p)
	}
}

func TestNumJSON(t *testing.T) {
	for _, tc := range []struct {
		n    stat.Num
		want string
	}{{stat.Num(math.NaN()), "null"}, {0.1234567891, "0.123457"}, {1, "1"}} {
		b, _ := tc.n.MarshalJSON()
		if string(b) != tc.want {
			t.Errorf("%v: %s, want %s", tc.n, b, tc.want)
		}
	}
}

func TestCountFalseSwitches(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tasks         []string
		count, routed int
		rate          float64 // NaN: none routed
	}{
		{"none", nil, 0, 0, math.NaN()},
		{"all fallbacks", []string{"", "", ""}, 0, 0, math.NaN()},
		{"steady", []string{"t1", "t1", "t1", "t1"}, 0, 4, 0},
		{"one away and back", []string{"t1", "t2", "t1", "t1"}, 1, 4, 0.25},
		{"stays away", []string{"t1", "t2", "t2", "t2"}, 3, 4, 0.75},
		{"first routed after fallbacks", []string{"", "", "t3", "t3", "t1"}, 1, 3, 1.0 / 3},
		{"fallbacks not counted", []string{"t1", "", "t2", "", "t1"}, 1, 3, 1.0 / 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := countFalseSwitches(tc.tasks)
			if fs.Count != tc.count || fs.Routed != tc.routed {
				t.Errorf("count, routed = %d, %d; want %d, %d", fs.Count, fs.Routed, tc.count, tc.routed)
			}
			if r := float64(fs.Rate); math.IsNaN(r) != math.IsNaN(tc.rate) || !math.IsNaN(r) && math.Abs(r-tc.rate) > 1e-12 {
				t.Errorf("rate = %v, want %v", r, tc.rate)
			}
		})
	}
}

func TestFalseSwitchesPooled(t *testing.T) {
	rs := []*SessionResult{
		{FalseSwitches: countFalseSwitches([]string{"a", "b", "a"})},
		{FalseSwitches: countFalseSwitches([]string{"x", "x", "x", "x", "x"})},
		{FalseSwitches: countFalseSwitches([]string{"", ""})},
	}
	fs := falseSwitchesOf(rs)
	if fs.Count != 1 || fs.Routed != 8 || fs.Rate != stat.Num(1.0/8) {
		t.Errorf("pooled = %+v, want 1 of 8 (0.125)", fs)
	}
	if s := fs.String(); s != "0.125 (1/8)" {
		t.Errorf("String = %q", s)
	}
}

// A session's false switches come from its S_base calls' routed tasks;
// fallbacks (threshold, error, side calls) are not routed.
func TestSessionFalseSwitches(t *testing.T) {
	base := []callObs{
		{task: "t1", fallback: "none"},
		{task: "t1", fallback: "threshold"},
		{task: "t2", fallback: "none"},
		{task: "", fallback: "side-call"},
		{task: "t2", fallback: "error"},
		{task: "t1", fallback: "none"},
	}
	r := sessionResult(&spec.Session{ID: "s"}, spec.ModeRouter, 0.8, base, nil, &endObs{coverage: math.NaN(), sections: math.NaN()})
	if fs := r.FalseSwitches; fs.Count != 1 || fs.Routed != 3 {
		t.Errorf("false switches = %+v, want 1 of 3", fs)
	}
}

func TestParseClassifier(t *testing.T) {
	for _, tc := range []struct {
		h                       string
		calls, errs, prompt, cp int
		ms                      float64
	}{
		{"", 0, 0, 0, 0, 0},
		{"1 0 250 8 1.500", 1, 0, 250, 8, 1.5},
		{"2 1 500 8 3.000", 2, 1, 500, 8, 3},
		{"1 0 250 8", 0, 0, 0, 0, 0},       // a field short
		{"1 0 -3 8 1.0", 0, 0, 0, 0, 0},    // negative tokens
		{"1 0 250 8 NaN", 0, 0, 0, 0, 0},   // no time
		{"x 0 250 8 1.0", 0, 0, 0, 0, 0},   // not a number
		{"1 0 250 8 1.0 9", 0, 0, 0, 0, 0}, // a field too many
	} {
		c := parseClassifier(tc.h)
		if c.Calls != tc.calls || c.Errors != tc.errs || c.PromptTokens != tc.prompt || c.CompletionTokens != tc.cp || float64(c.Ms) != tc.ms {
			t.Errorf("%q: %+v", tc.h, c)
		}
		if (c.Calls == 0) != math.IsNaN(float64(c.MsPerCall)) {
			t.Errorf("%q: ms per call %v with %d calls", tc.h, c.MsPerCall, c.Calls)
		}
	}
	var sum Classifier
	sum.add(parseClassifier("1 0 250 8 1.5"))
	sum.add(parseClassifier("3 1 750 24 4.5"))
	if sum.Calls != 4 || sum.Errors != 1 || sum.PromptTokens != 1000 || sum.CompletionTokens != 32 || sum.Ms != 6 || sum.MsPerCall != 1.5 {
		t.Errorf("sum: %+v", sum)
	}
}

package router

import (
	"math"
	"slices"
	"strings"

	"github.com/rcm-dev/rcm/internal/str"
)

// profileTurns bounds the turns read per task: its first (usually the
// statement of the task) and its most recent ones. Routing cost then depends
// on the number of tasks, not on the length of the history.
const profileTurns = 6

// BM25 parameters (the usual ones) and the weights of the kinds of term:
// file paths and phrases (word pairs) say more about a task than words do.
const (
	bm25K1   = 1.2
	bm25B    = 0.75
	termsCap = 2048 // distinct query terms kept
)

var kindWeight = [4]float64{kindWord: 1, kindFile: 2, kindPair: 1.5, kindPhrase: 2}

// query holds the distinct terms of the turn being classified.
type query struct {
	index     map[term]int
	weight    []float64
	kind      []uint8
	request   int  // terms of the request itself
	continues bool // it opens with a reply word or conjunction
}

func newQuery() *query { return &query{index: make(map[term]int, 128)} }

func (q *query) add(h term, kind int) {
	if k, ok := q.index[h]; ok {
		if q.weight[k] < 3 {
			q.weight[k]++
		}
		return
	}
	if len(q.weight) >= termsCap {
		return
	}
	q.index[h] = len(q.weight)
	q.weight = append(q.weight, 1)
	q.kind = append(q.kind, uint8(kind))
}

// profile is what a task's routed turns say about it: the workspaces they
// use, how often each query term occurs in them, and the terms of its
// subject (how a person names the task when returning to it).
type profile struct {
	task    string
	roots   []string
	tf      []float64 // per query term
	len     float64   // terms read
	subject map[term]uint8
}

// subjectCap bounds the subject line of a task, in bytes.
const subjectCap = 240

// subject is the line a task is named by: the first line of its first
// request with at least three words that are not stop words ("Fix this
// issue:" is not one; the issue's title under it is), or the request's head.
func subject(req string) string {
	req = str.Clip(req, 4*subjectCap)
	for line := range strings.SplitSeq(req, "\n") {
		n := 0
		for _, w := range strings.Fields(line) {
			w = strings.Trim(w, ",.:;!?()[]{}\"'`*#")
			if len(w) >= 2 && !stop[hashWord(w)] {
				n++
			}
		}
		// A line ending in a colon introduces what follows ("More on
		// that issue, from its discussion:"); it names nothing.
		if n >= 3 && !strings.HasSuffix(strings.TrimSpace(line), ":") {
			return str.Clip(line, subjectCap)
		}
	}
	return str.Clip(req, subjectCap)
}

// subjectTerms collects the word, pair and phrase terms of a subject line.
type subjectTerms map[term]uint8

func (st subjectTerms) term(h term, kind int) {
	if kind != kindFile {
		st[h] = uint8(kind)
	}
}
func (subjectTerms) path(string, string, bool) {}

// profiles reads the chosen turns of every task seen before turn i.
func (s *call) profiles(i int, q *query) []profile {
	prof := make([]profile, 0, len(s.byTask))
	for _, task := range s.tasks {
		turns := s.byTask[task]
		seed := s.seeds[task]
		if len(turns) == 0 && seed == "" {
			continue
		}
		p := profile{task: task, tf: make([]float64, len(q.weight))}
		count := func(h term, _ int) {
			p.len++
			if k, ok := q.index[h]; ok {
				p.tf[k]++
			}
		}
		if len(turns) == 0 {
			var roots []string
			scan(str.Clip(seed, requestCap), &s.f, &collector{f: &s.f, terms: count, roots: &roots})
			for _, r := range roots {
				p.roots = addRoot(p.roots, r)
			}
			prof = append(prof, p)
			continue
		}
		if turns[0] < i {
			st := subjectTerms{}
			scan(subject(s.request(turns[0])), &s.f, st)
			p.subject = st
		}
		for n, j := range turns {
			if j >= i || (n > 0 && n < len(turns)-profileTurns+1) {
				continue
			}
			sig := read(s.t, &s.f, s.t.Turns[j], requestCap, count)
			for _, set := range [][]string{sig.named, sig.touched} {
				for _, r := range set {
					p.roots = addRoot(p.roots, r)
				}
			}
		}
		prof = append(prof, p)
	}
	return prof
}

// evidence is what the lexical comparison of a turn with the tasks found.
type evidence struct {
	best, second int       // candidates by score; second -1 with one
	scores       []float64 // BM25 per candidate
	matched      []float64 // idf-weighted query mass each candidate holds
	novel        float64   // idf-weighted query mass no task holds
	files        []float64 // the part of each score from file terms
	cover        []float64 // share of each candidate's subject the query names
}

// compare scores every candidate against the query (BM25 over tasks as
// documents) and measures how much of the query no task accounts for.
func compare(q *query, cand []profile) evidence {
	e := evidence{second: -1, scores: make([]float64, len(cand)), matched: make([]float64, len(cand)), files: make([]float64, len(cand))}
	avg := 0.0
	for _, p := range cand {
		avg += p.len
	}
	avg = max(avg/float64(max(len(cand), 1)), 1)
	n := float64(len(cand))
	for k, w := range q.weight {
		df := 0.0
		for _, p := range cand {
			if p.tf[k] > 0 {
				df++
			}
		}
		w *= kindWeight[q.kind[k]]
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		if df == 0 {
			e.novel += w * idf
			continue
		}
		for c, p := range cand {
			tf := p.tf[k]
			if tf == 0 {
				continue
			}
			e.matched[c] += w * idf
			v := w * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*p.len/avg))
			e.scores[c] += v
			if q.kind[k] == kindFile {
				e.files[c] += v
			}
		}
	}
	e.cover = make([]float64, len(cand))
	for c, p := range cand {
		var have, all float64
		for h, kind := range p.subject {
			df := 0.0
			for _, o := range cand {
				if _, ok := o.subject[h]; ok {
					df++
				}
			}
			w := kindWeight[kind] * math.Log(1+(n-df+0.5)/(df+0.5))
			all += w
			if _, ok := q.index[h]; ok {
				have += w
			}
		}
		if all > 0 {
			e.cover[c] = have / all
		}
	}
	for c := range cand {
		switch {
		case c == e.best:
		case e.scores[c] > e.scores[e.best]:
			e.second, e.best = e.best, c
		case e.second < 0 || e.scores[c] > e.scores[e.second]:
			e.second = c
		}
	}
	return e
}

// Calibration of the lexical decision. Each part is a logistic of a
// linear score of the evidence; the constants are round values set by
// looking at the evidence of new and returning requests in the shared
// layout of the shared data's sessions (so the replay numbers on that data
// are in-sample), and checked on the real single-task sessions
// (TestSWETogetherStaysOneTask) and the cases (TestIssueCases).
const (
	// New work: the request names little of any task's subject (cover),
	// most of its weight is in terms no task has (share), the best task's
	// score is small against that unseen weight (held), and there is
	// enough of it (novel, against newMass): a short question about
	// something unseen is more likely about the work at hand. Set so that
	// every new issue of the shared data opens a task while few pasted
	// discussions of earlier issues that do not name them (bench replay
	// --returns untitled) do: a wrong new task is worse than a fallback.
	newBias, newShare, newHeld, newSlope, newMass = 0.27, 0.5, 0.5, 20.0, 25.0
	// newWords: a statement of new work is long; a request of this many
	// terms shows 1-1/e of the evidence its words can give.
	newWords = 20.0
	// continueDiscount: a request opening with a reply or conjunction
	// ("and ...", "also ...", "yes, ...") continues the conversation.
	continueDiscount = 0.5
	// newAside scales the probability of new work a request shows by its
	// words alone in a folder of checkouts: new work there is placed by
	// the checkout it names or works in (the workspace signal).
	newAside = 0.25
	// Which task: how far the best subject cover is ahead of the second,
	// or, when no subject is named, how far the best BM25 score is ahead
	// (margin) and how much of the query it holds (share).
	coverSlope, coverBias              = 8.0, -1.0
	marginSlope, shareSlope, scoreBias = 6.0, 8.0, -4.0
	// coverNamed: a subject this well covered is named by the request.
	coverNamed = 0.5
)

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// lexical picks the task whose turns are most like the query, among only
// when not nil, or opens a task when the query is mostly unlike every task.
// Its confidence is P(not new) x P(this task | not new), or P(new).
func (s *call) lexical(q *query, prof []profile, only []string) Decision {
	cand := prof[:0:0]
	for _, p := range prof {
		if only == nil || slices.Contains(only, p.task) {
			cand = append(cand, p)
		}
	}
	if len(cand) == 0 {
		return s.guess()
	}
	e := compare(q, cand)
	top := e.scores[e.best]
	share := 0.0
	if m := e.matched[e.best] + e.novel; m > 0 {
		share = e.matched[e.best] / m
	}
	// The best and second subject covers.
	cb, cs, ci := 0.0, 0.0, e.best
	for c, v := range e.cover {
		switch {
		case v > cb:
			cs, cb, ci = cb, v, c
		case v > cs:
			cs = v
		}
	}
	pNew := 0.0
	if only == nil {
		// The best task's score against the unseen mass: a discussion
		// pasted about earlier work repeats that work's terms, a new
		// statement does not.
		held := top / max(e.novel, 1)
		pNew = logistic(newSlope*(newBias-cb-newShare*share-newHeld*held)) * (1 - math.Exp(-e.novel/newMass)) * (1 - math.Exp(-float64(q.request)/newWords))
		if q.continues {
			pNew *= continueDiscount
		}
		if s.checkouts(cand) {
			pNew *= newAside
		}
	}
	// Opening a task is final once routed; below the threshold the turn
	// stays a guess on the likeliest known task.
	if pNew >= s.thr {
		return Decision{Task: s.newID(), Confidence: pNew, Method: MethodNew, Scores: map[string]float64{"new": pNew}}
	}
	if top == 0 && cb == 0 && len(cand) > 1 {
		return s.guess()
	}
	best, pWhich, method := e.best, 1.0, MethodLexical
	switch {
	case cb >= coverNamed:
		best, method = ci, MethodSubject
		if len(cand) > 1 {
			pWhich = logistic(coverSlope*(cb-cs) + coverBias)
		}
	case len(cand) > 1:
		margin := 1.0
		if e.second >= 0 && top > 0 {
			margin = (top - e.scores[e.second]) / top
		}
		pWhich = logistic(marginSlope*margin + shareSlope*share + scoreBias)
		// "files" when the files the request names are this task's alone.
		method = MethodFiles
		for c := range cand {
			if c == best && e.files[c] == 0 || c != best && e.files[c] > 0 {
				method = MethodLexical
			}
		}
	}
	conf := (1 - pNew) * pWhich
	probs := make(map[string]float64, len(cand)+1)
	for c, p := range cand {
		if top > 0 && c != best {
			probs[p.task] = conf * e.scores[c] / top
		}
	}
	probs[cand[best].task] = conf
	if pNew > 0 {
		probs["new"] = pNew
	}
	return Decision{Task: cand[best].task, Confidence: conf, Method: method, Scores: probs}
}

// checkouts reports whether the session works in a folder of checkouts:
// the frame is no repository and some task works in a folder below it.
func (s *call) checkouts(cand []profile) bool {
	if s.f.repo {
		return false
	}
	for _, p := range cand {
		for _, r := range p.roots {
			if r != "." {
				return true
			}
		}
	}
	return false
}

// guess is the decision when nothing is known: the most recent task, not
// confidently.
func (s *call) guess() Decision {
	for j := len(s.ds) - 1; j >= 0; j-- {
		if s.ds[j].Task != "" {
			return one(s.ds[j].Task, 0.5, MethodLexical)
		}
	}
	if len(s.tasks) > 0 {
		return one(s.tasks[len(s.tasks)-1], 0.5, MethodLexical)
	}
	return one(s.newID(), 0.5, MethodNew)
}

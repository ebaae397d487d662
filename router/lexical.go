package router

import (
	"math"
	"slices"
)

// profileTurns bounds the turns read per task: its first (usually the
// statement of the task) and its most recent ones. Routing cost then depends
// on the number of tasks, not on the length of the history.
const profileTurns = 6

// BM25 parameters (the usual ones) and the weight of file terms, which say
// more about a task than words do.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	fileWeight = 2.0
	termsCap   = 1024 // distinct query terms kept
	// sharpness turns relative BM25 scores into probabilities (softmax of
	// score/top * sharpness); set with the calibration test.
	sharpness = 7.0
	// evidenceScale: the share of the query's weight the best task must
	// match for full confidence (1-e^-1 at this share).
	evidenceScale = 0.1
)

// query holds the distinct terms of the turn being classified.
type query struct {
	index  map[term]int
	weight []float64
	file   []bool
}

func newQuery() *query { return &query{index: make(map[term]int, 64)} }

func (q *query) add(h term, file bool) {
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
	q.file = append(q.file, file)
}

// profile is what a task's routed turns say about it: the checkouts they
// use and how often each query term occurs in them.
type profile struct {
	task  string
	roots []string
	tf    []float64 // per query term
	len   float64   // terms read
}

// profiles reads the chosen turns of every task seen before turn i.
func (s *session) profiles(i int, q *query) []profile {
	prof := make([]profile, 0, len(s.byTask))
	for _, task := range s.tasks {
		turns := s.byTask[task]
		seed := s.seeds[task]
		if len(turns) == 0 && seed == "" {
			continue
		}
		p := profile{task: task, tf: make([]float64, len(q.weight))}
		count := func(h term, _ bool) {
			p.len++
			if k, ok := q.index[h]; ok {
				p.tf[k]++
			}
		}
		if len(turns) == 0 {
			var roots []string
			scan(clip(seed, requestCap), &collector{terms: count, roots: &roots})
			for _, r := range roots {
				p.roots = addRoot(p.roots, r)
			}
			prof = append(prof, p)
			continue
		}
		for n, j := range turns {
			if j >= i || (n > 0 && n < len(turns)-profileTurns+1) {
				continue
			}
			sig := read(s.t, s.t.Turns[j], requestCap, count)
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

// lexical picks the task whose turns are most like the query (BM25 over
// tasks as documents), among only when not nil.
func (s *session) lexical(q *query, prof []profile, only []string) Decision {
	cand := prof[:0:0]
	for _, p := range prof {
		if only == nil || slices.Contains(only, p.task) {
			cand = append(cand, p)
		}
	}
	switch len(cand) {
	case 0:
		return s.guess()
	case 1:
		return one(cand[0].task, confAlone, MethodLexical)
	}
	avg := 0.0
	for _, p := range cand {
		avg += p.len
	}
	avg = max(avg/float64(len(cand)), 1)
	n := float64(len(cand))
	scores := make([]float64, len(cand))
	files := make([]float64, len(cand))
	for k, w := range q.weight {
		df := 0.0
		for _, p := range cand {
			if p.tf[k] > 0 {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		if q.file[k] {
			w *= fileWeight
		}
		for c, p := range cand {
			tf := p.tf[k]
			if tf == 0 {
				continue
			}
			v := w * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*p.len/avg))
			scores[c] += v
			if q.file[k] {
				files[c] += v
			}
		}
	}
	best := 0
	for c := range scores {
		if scores[c] > scores[best] {
			best = c
		}
	}
	top := scores[best]
	mass := 0.0
	for k, w := range q.weight {
		if q.file[k] {
			w *= fileWeight
		}
		mass += w
	}
	probs := make(map[string]float64, len(cand))
	sum := 0.0
	for c := range scores {
		e := 1.0
		if top > 0 {
			e = math.Exp(sharpness * (scores[c]/top - 1))
		}
		sum += e
		scores[c] = e
	}
	// Weak evidence (the best task matches a small share of the query)
	// lowers the confidence, however far ahead that task is.
	evidence := 1 - math.Exp(-top/(mass*evidenceScale))
	for c, p := range cand {
		probs[p.task] = scores[c] / sum * evidence
	}
	// "files" when file paths carry a good share of the winner's score.
	method := MethodLexical
	if top > 0 && files[best] >= top/3 {
		method = MethodFiles
	}
	return Decision{Task: cand[best].task, Confidence: probs[cand[best].task], Method: method, Scores: probs}
}

// guess is the decision when nothing is known: the most recent task, not
// confidently.
func (s *session) guess() Decision {
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

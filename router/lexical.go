package router

import (
	"math"
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
	index   map[term]int
	weight  []float64
	kind    []uint8
	src     []uint8 // where each term was found: srcRequest, srcActs or both
	request int     // terms of the request itself
}

// Sources of query terms: the request's text, the turn's tool calls.
const (
	srcRequest uint8 = 1 << iota
	srcActs
)

func newQuery() *query { return &query{index: make(map[term]int, 128)} }

// adder returns the function that adds the terms found in src.
func (q *query) adder(src uint8) func(term, int) {
	return func(h term, kind int) { q.add(h, kind, src) }
}

func (q *query) add(h term, kind int, src uint8) {
	if k, ok := q.index[h]; ok {
		if q.weight[k] < 3 {
			q.weight[k]++
		}
		q.src[k] |= src
		return
	}
	if len(q.weight) >= termsCap {
		return
	}
	q.index[h] = len(q.weight)
	q.weight = append(q.weight, 1)
	q.kind = append(q.kind, uint8(kind))
	q.src = append(q.src, src)
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
				// A record's checkout is where its task's tool calls
				// worked: outside a repository, the session works there.
				s.f.outside = s.f.outside || s.f.repo && strings.HasPrefix(r, "/")
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
			sig := read(s.t, &s.f, s.t.Turns[j], requestCap, count, count)
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
	mass         float64   // idf-weighted query mass in all
	cover        []float64 // share of each candidate's subject the query names
}

// compare scores every candidate against the query's terms from src (BM25
// over tasks as documents) and measures how much of the query no task
// accounts for.
func compare(q *query, cand []profile, src uint8) evidence {
	e := evidence{second: -1, scores: make([]float64, len(cand)), matched: make([]float64, len(cand))}
	avg := 0.0
	for _, p := range cand {
		avg += p.len
	}
	avg = max(avg/float64(max(len(cand), 1)), 1)
	n := float64(len(cand))
	for k, w := range q.weight {
		if q.src[k]&src == 0 {
			continue
		}
		df := 0.0
		for _, p := range cand {
			if p.tf[k] > 0 {
				df++
			}
		}
		w *= kindWeight[q.kind[k]]
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		e.mass += w * idf
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
			if k, ok := q.index[h]; ok && q.src[k]&src != 0 {
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

// fileMass is how the file terms of a query from one source divide among
// the candidates: the weight each holds, the weight only others hold, and
// the weight none holds.
type fileMass struct {
	own, other    []float64
	unseen, total float64
}

// shares measures the query's file terms from src against the candidates.
func shares(q *query, cand []profile, src uint8) fileMass {
	m := fileMass{own: make([]float64, len(cand)), other: make([]float64, len(cand))}
	for k, w := range q.weight {
		if q.src[k]&src == 0 || q.kind[k] != kindFile {
			continue
		}
		m.total += w
		held := false
		for _, p := range cand {
			held = held || p.tf[k] > 0
		}
		if !held {
			m.unseen += w
		}
		for c, p := range cand {
			switch {
			case p.tf[k] > 0:
				m.own[c] += w
			case held:
				m.other[c] += w
			}
		}
	}
	return m
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

// guess is the decision when nothing is known: the most recent task, with
// no confidence (it falls back).
func (s *call) guess() Decision {
	for j := len(s.ds) - 1; j >= 0; j-- {
		if s.ds[j].Task != "" {
			return one(s.ds[j].Task, 0, MethodScored)
		}
	}
	if len(s.tasks) > 0 {
		return one(s.tasks[len(s.tasks)-1], 0, MethodScored)
	}
	return one(s.newID(), 0, MethodNew)
}

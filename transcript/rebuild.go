package transcript

import "fmt"

// Insert is a message to splice into a rebuilt body.
type Insert struct {
	Before int    // index of the message it goes before; len(Messages) appends
	Raw    []byte // one complete JSON object
}

// Edit says how to rebuild a body: which messages stay, which new ones go
// in, and which kept ones are replaced by other bytes (a condensed tool
// output, a rewritten compaction prompt).
type Edit struct {
	Keep    []int          // indexes of kept messages, ascending
	Insert  []Insert       // ordered by Before
	Replace map[int][]byte // kept index -> the complete JSON object sent instead
}

// Rebuild returns a body whose messages array holds the kept messages, each
// as its exact original bytes unless replaced, and the inserted ones.
// Everything outside the messages array is copied unchanged. With every
// message kept, nothing inserted and nothing replaced it returns t.Body
// itself.
func (t *Transcript) Rebuild(e Edit) ([]byte, error) {
	if a := adapters[t.Format]; a != nil && a.settle != nil {
		var err error
		if e, err = a.settle(t, e); err != nil {
			return nil, err
		}
	}
	kept, inserts := e.Keep, e.Insert
	if len(inserts) == 0 && len(e.Replace) == 0 && len(kept) == len(t.Messages) && ascendingAll(kept) {
		return t.Body, nil
	}
	size := len(t.Body) - (t.arrEnd - t.arrStart) + 2
	for _, in := range inserts {
		size += len(in.Raw) + 1
	}
	prev := -1
	for _, k := range kept {
		if k <= prev || k >= len(t.Messages) {
			return nil, fmt.Errorf("transcript: kept index %d out of order or range", k)
		}
		prev = k
		size += len(t.raw(k, e.Replace)) + 1
	}
	for i := 1; i < len(inserts); i++ {
		if inserts[i].Before < inserts[i-1].Before {
			return nil, fmt.Errorf("transcript: inserts out of order at %d", i)
		}
	}
	out := make([]byte, 0, size)
	out = append(out, t.Body[:t.arrStart]...)
	out = append(out, '[')
	n, ins := 0, 0
	add := func(raw []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
		n++
	}
	for _, k := range kept {
		for ins < len(inserts) && inserts[ins].Before <= k {
			add(inserts[ins].Raw)
			ins++
		}
		add(t.raw(k, e.Replace))
	}
	for ; ins < len(inserts); ins++ {
		add(inserts[ins].Raw)
	}
	out = append(out, ']')
	out = append(out, t.Body[t.arrEnd:]...)
	return out, nil
}

func ascendingAll(kept []int) bool {
	for i, k := range kept {
		if k != i {
			return false
		}
	}
	return true
}

func (t *Transcript) raw(i int, replace map[int][]byte) []byte {
	if r, ok := replace[i]; ok {
		return r
	}
	return t.Messages[i].Raw
}

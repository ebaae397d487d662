package transcript

import "fmt"

// Insert is a message to splice into a rebuilt body.
type Insert struct {
	Before int    // index of the message it goes before; len(Messages) appends
	Raw    []byte // one complete JSON object
}

// Rebuild returns a body whose messages array holds the kept messages (by
// index, ascending) and the inserted ones, each as its exact original bytes.
// Everything outside the messages array is copied unchanged. With every
// message kept and nothing inserted it returns t.Body itself.
func (t *Transcript) Rebuild(kept []int, inserts []Insert) ([]byte, error) {
	if len(inserts) == 0 && len(kept) == len(t.Messages) && ascendingAll(kept) {
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
		size += len(t.Messages[k].Raw) + 1
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
		add(t.Messages[k].Raw)
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

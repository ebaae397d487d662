package memory

import (
	"encoding/binary"
	"fmt"
	"html"

	"github.com/rcm-dev/rcm/internal/str"
	"github.com/rcm-dev/rcm/redact"
	"github.com/rcm-dev/rcm/transcript"
)

// preface is the first line of the memory message: it tells the model what
// the message is, so that it does not answer it as a request.
const preface = "This is rcm's record of the state of this task, kept by the proxy from the conversation so far; it is context, not a new request."

// Others are the tasks a memory message briefs besides its own, the most
// recently worked first, and the most bytes the brief may take (the proxy
// gives it half the bytes of their turns the call leaves out, so that the
// brief never costs more than half of what leaving them out saves).
type Others struct {
	Records []Record
	Bytes   int
}

// Message returns the memory message of r: one complete chat message object,
// {"role":"user","content":"<rcm-task-state task=\"ID\">\n...\n</rcm-task-state>"},
// to splice into the messages array before the first request of a run of
// the task (the proxy places it where the routed history lacks it). The
// content is the preface line, Render(r) and the brief of the other tasks
// (renderOthers) whose turns the routed context leaves out. With maxTokens
// > 0 the whole object stays within maxTokens*4 bytes (tokens estimated as
// bytes/4, escaping included), the requirements kept before anything else,
// and the brief takes at most half: the task's own state is what the
// context is for. It is nil when r has no requirements and there is no
// brief. The same records always give the same bytes.
func Message(r Record, o Others, maxTokens int) []byte {
	open := `<rcm-task-state task="` + html.EscapeString(r.Task) + `">` + "\n" + preface + "\n"
	const end = "</rcm-task-state>"
	budget := 0
	if maxTokens > 0 {
		budget = maxTokens - (len(open)+len(end)+32)/4
		if budget < 1 {
			budget = 1
		}
	}
	for {
		own := Render(r, budget)
		room := max(0, o.Bytes)
		if maxTokens > 0 {
			room = max(0, min(room, budget*4-len(own), budget*4/2))
		}
		brief := renderOthers(o.Records, room)
		if len(r.Requirements) == 0 && brief == "" {
			return nil // nothing to say
		}
		// Records are stored redacted; redacting the text again covers
		// a record that never passed the store (idempotent otherwise).
		msg := encodeMessage(redact.String(open + own + brief + end))
		over := len(msg) - maxTokens*4
		if maxTokens <= 0 || over <= 0 || budget == 1 {
			return msg
		}
		// Escaping made it longer than estimated: shrink and render again.
		budget = max(1, budget-(over+3)/4)
	}
}

// encodeMessage writes {"role":"user","content":text}, text as str.Quote
// encodes it.
func encodeMessage(text string) []byte {
	return append(append([]byte(`{"role":"user","content":`), str.Quote(text)...), '}')
}

// maxFrozen is how many frozen messages each task keeps. A record placed at
// the start of a run of the task stays in every later context of the task,
// so each run start's message is kept while the session may still send it;
// past this many run starts the oldest place is left empty (one prefix
// break, far back).
const maxFrozen = 64

var bucketFrozen = []byte("frozen")

// frozenKey is the task id, length-prefixed so that no task id is a prefix
// of another's keys, followed by the turn fingerprint.
func frozenKey(task string, fp transcript.Fingerprint) []byte {
	k := binary.AppendUvarint(nil, uint64(len(task)))
	k = append(k, task...)
	return append(k, fp[:]...)
}

// FrozenAt returns the memory messages frozen for the turns fps of task
// (each placed before its turn), so that every later call forwards the same
// bytes at the same place (a provider's prefix cache keeps hitting), in one
// read: msgs[i] and found[i] (whether there is one) are those of the turn
// fps[i].
func (s *Store) FrozenAt(session, task string, fps []transcript.Fingerprint) (msgs [][]byte, found []bool, err error) {
	err = s.view("frozen "+session+"/"+task, func(r reader) error {
		msgs, found, err = r.frozenAt(session, task, fps)
		return err
	})
	return msgs, found, err
}

// PutFrozen freezes msg as the memory message of the turn fp of task. The
// first message frozen for a turn stays: a later PutFrozen for the same turn
// (two calls of the turn racing) keeps it, so that every call after the
// first forwards the same bytes. Each task keeps the maxFrozen latest turns.
func (w *Tx) PutFrozen(session, task string, fp transcript.Fingerprint, msg []byte) error {
	if err := checkID("session", session); err != nil {
		return fmt.Errorf("memory: put frozen: %w", err)
	}
	if err := checkID("task", task); err != nil {
		return fmt.Errorf("memory: put frozen: %w", err)
	}
	// Message already redacts, so this changes nothing for the proxy
	// (every call of a turn still forwards the same bytes); it keeps any
	// other caller's secrets out of the store.
	msg = redact.Bytes(msg)
	return w.do("put frozen "+session+"/"+task, func() error { return w.w.putFrozen(session, task, fp, msg) })
}

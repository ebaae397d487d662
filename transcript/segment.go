package transcript

import "strings"

// Texts by which OpenCode marks its own synthetic messages and side calls.
// They are matched by prefix so that small wording changes in the tail of a
// prompt do not break detection.
const (
	titlePrompt      = "You are a title generator"
	compactionPrompt = "You are a context summarization agent"
	continuePrompt   = "Continue if you have next steps"
	recapQuestion    = "What did we do so far?"
)

func classify(t *Transcript) Kind {
	for i := range t.Messages {
		m := &t.Messages[i]
		if !m.System() {
			break
		}
		// Only the opening is compared: a harness's system prompt runs to
		// tens of KB, decoded whole here it would be on every call.
		switch text := m.head(len(compactionPrompt)); {
		case strings.HasPrefix(text, titlePrompt):
			return Title
		case strings.HasPrefix(text, compactionPrompt):
			return Compaction
		}
	}
	return Agent
}

// isContinuation reports whether a user message is the harness's synthetic
// "keep going" prompt rather than a request.
func isContinuation(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), continuePrompt)
}

// segment splits messages into turns where opensTurn says one opens;
// everything else belongs to the turn it follows. It fingerprints each turn
// with the opening text opensTurn decoded anyway. It starts at message from:
// turns and fps are those of the turns opened before it (none from 0; a
// Cache takes them over from the previous call, whose messages before from
// are the same), to be extended.
func segment(ms []Message, opensTurn func([]Message, int) (TurnKind, string, bool), turns []Turn, fps []Fingerprint, from int) ([]Turn, int, []Fingerprint) {
	preamble := len(ms)
	var c chain
	if len(turns) > 0 {
		preamble, c.prev = turns[0].Start, fps[len(fps)-1]
		turns[len(turns)-1].End = len(ms)
	}
	for i := from; i < len(ms); i++ {
		kind, text, opens := opensTurn(ms, i)
		if !opens {
			continue
		}
		if len(turns) == 0 {
			preamble = i
		} else {
			turns[len(turns)-1].End = i
		}
		turns = append(turns, Turn{Kind: kind, Start: i, End: len(ms)})
		fps = append(fps, c.next(kind, text))
	}
	return turns, preamble, fps
}

// opensTurn is the chat rule: a turn opens at a user request; tool results,
// synthetic continuation prompts and anything else belong to the turn they
// follow. OpenCode's post-compaction recap (the question "What did we do so
// far?" answered by the summary) opens a Summary turn, and so does Claude
// Code's message holding its summary, on whichever wire it comes (Claude
// Code behind a router that speaks chat completions, a replayed log).
func opensTurn(ms []Message, i int) (TurnKind, string, bool) {
	m := &ms[i]
	if m.Role != "user" {
		return 0, "", false
	}
	text := m.Text()
	if isContinuation(text) {
		return 0, "", false
	}
	if strings.TrimSpace(text) == recapQuestion && i+1 < len(ms) && ms[i+1].Role == "assistant" ||
		strings.HasPrefix(strings.TrimSpace(text), continuedPrefix) {
		return Summary, text, true
	}
	return Request, text, true
}

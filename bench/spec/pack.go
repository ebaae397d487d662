package spec

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/rcm-dev/rcm/internal/chat"
)

// The demo pack: a spec of a few real django tasks from mini-swe-agent
// trajectories (MIT), trimmed; pack/ATTRIBUTION names the sources. It is
// rebuilt from shared/data by `go test ./bench/spec -run TestDemoPack -update`.
var (
	//go:embed pack/demo.json
	demoJSON []byte
	//go:embed pack/ATTRIBUTION
	demoAttribution string
)

// Demo returns the embedded demo spec, what `rcm bench replay` runs with no
// arguments.
func Demo() (*Spec, error) {
	s, err := Parse(demoJSON)
	if err != nil {
		return nil, fmt.Errorf("bench: demo pack: %w", err)
	}
	return s, nil
}

// DemoAttribution returns the sources and licences of the demo pack.
func DemoAttribution() string { return demoAttribution }

// trimOutputs shortens every tool result of t longer than max bytes to its
// head and tail around a marker that says how much was cut, keeping packs
// small. The cut falls on UTF-8 boundaries.
func trimOutputs(t *Task, max int) {
	for i := range t.Stages {
		for j := range t.Stages[i].Messages {
			m := &t.Stages[i].Messages[j]
			if m.Role == chat.RoleTool && len(m.Content) > max {
				m.Content = trimMiddle(m.Content, max)
			}
		}
	}
}

func trimMiddle(s string, max int) string {
	head, tail := max*2/3, max/3
	for head > 0 && !utf8Start(s[head]) {
		head--
	}
	cut := len(s) - tail
	for cut < len(s) && !utf8Start(s[cut]) {
		cut++
	}
	var b strings.Builder
	b.WriteString(s[:head])
	fmt.Fprintf(&b, "\n[... %d bytes trimmed by the rcm demo pack ...]\n", cut-head)
	b.WriteString(s[cut:])
	return b.String()
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

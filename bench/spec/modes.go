package spec

// Modes the proxy knows (DESIGN.md); the bench sends them as X-RCM-Mode.
const (
	ModeNative = "native"
	ModeRouter = "router"
	ModeRCM    = "rcm"
)

// DefaultModes is what a zero list of modes means: all three.
var DefaultModes = []string{ModeNative, ModeRouter, ModeRCM}

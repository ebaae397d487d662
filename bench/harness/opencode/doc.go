// Package opencode is the harness.Harness of OpenCode: one `opencode serve`
// (internal/client/opencode) for all runs, one OpenCode session per
// schedule, one provider per arm whose base URL carries the mode and whose
// requests carry X-RCM-Threshold.
//
// Caveats: the server's configuration is written once, for every arm of
// the run, when the harness starts.
package opencode

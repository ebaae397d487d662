// Command rcm is the task-aware context manager for coding agents: an HTTP
// proxy between a harness and the model API (rcm serve), its inspector
// (rcm inspect), Claude Code's status line (rcm statusline, which prints
// nothing when rcm is not running) and its bench runner (rcm bench
// replay|run|report|spec|upstream).
//
// This package only parses flags (each with an environment twin: RCM_*,
// or the standard OTEL_EXPORTER_OTLP_* for traces; for serve a --config
// JSON file too) and wires the other packages; the logic
// lives in proxy, router, memory, compaction, transcript and bench.
package main

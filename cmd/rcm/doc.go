// Command rcm is the task-aware context manager for coding agents: an HTTP
// proxy between a harness and the model API (rcm serve), its inspector
// (rcm inspect) and its bench runner (rcm bench replay|run|report|spec|
// upstream).
//
// This package only parses flags (each with an RCM_* environment twin, and
// for serve a --config JSON file) and wires the other packages; the logic
// lives in proxy, router, memory, compaction, transcript and bench.
package main

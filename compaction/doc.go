// Package compaction owns token estimates, fitting a routed context under a
// budget, and the task-aware rewriting of a harness's own compaction call.
//
// Estimates are byte-based (about four bytes a token): consistent across
// modes, which is what budgets and bench ratios need, but not a tokenizer.
package compaction

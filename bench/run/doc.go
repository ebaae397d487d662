// Package run is the real-harness runner (`rcm bench run`): a harness
// (package harness) works through each schedule in each arm in five
// worktree checkouts, behind a meter (Meter) that counts what the upstream
// bills; the focus checkout's final diff is scored on a clean checkout as
// SWE-bench does (Verify): the diff's parts touching the test patch's files
// are left out, the rest applied, then the task's test patch, then the
// FAIL_TO_PASS and PASS_TO_PASS tests run. One JSONL line per run
// (Result) is appended to runs.jsonl as it finishes; a rerun resumes.
//
// Caveats: a test patch that does not apply is an error (checked before any
// model call), not an unresolved task. The harness runs tools unattended in
// the checkouts: run it only on throw-away clones.
package run

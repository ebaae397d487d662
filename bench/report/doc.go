// Package report is the run report (`rcm bench report DIR`): from a run's
// runs.jsonl it computes, per arm, Res_unint and Res_switch with bootstrap
// intervals, the Gap between them, costs, and the tasks that flipped, and
// writes run_report.md, CSV tables and SVG plots.
//
// Caveats: intervals are bootstrap percentiles over sessions with a fixed
// seed, so a report is reproducible, and wide with few sessions.
package report

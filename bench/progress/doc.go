// Package progress reports how far a replay or a run is: Tracker counts
// finished calls and sessions and tells a callback, Bar shows that as a
// redrawn bar with an ETA on a terminal or plain lines in logs, and
// Parallel runs units on a fixed number of workers until a context ends.
package progress

// Package ci tells the tests whether they run under CI, where a missing
// prerequisite (a client npm cannot install, Chromium, the shared data
// set) fails the test instead of skipping it. CI counts as set when the
// environment variable CI is non-empty, whatever its value: services set
// it to true, 1, True or their own name, and a test that skips where it
// should have run hides a gap, while one that fails on a developer's
// machine says why.
package ci

// Package proxytest runs rcm's proxy for the tests that drive it from
// outside, as a harness or a user would (the rcm inspect command, the
// inspector's browser test): a proxy with a fresh store before a given
// upstream, and a helper that sends it one call of a session.
package proxytest

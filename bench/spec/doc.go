// Package spec owns what a bench measures: the spec format (tasks with
// their stages and verifier, sessions with their workspaces, the S_base and
// S_switch schedules; see bench/SPEC.md), its validation and the
// projection check pi_A S_switch(A) = S_base(A); tasks built from SWE-bench
// records and converted trajectories (ReadData); session assembly
// by the Switch-SWE rule (Assemble, NewSpec); the checkout and shared
// layouts; the embedded demo pack; the rcm modes a bench compares; and the
// model calls a harness sends for one schedule (Calls), with OpenCode
// 1.18.33's system prompt.
//
// Caveats: Calls share backing arrays; do not modify their messages.
// Requests name their task's checkout (layout checkout) or its issue's
// title (layout shared), so what a router can use depends on the layout.
package spec

// Package hostile is a family of test targets that answer badly on purpose:
// they accept and never answer, trickle one byte at a time, stream forever,
// send bodies of a GiB (generated, never stored), export malformed or
// contradictory metrics (NaN, +Inf, negative gauges, duplicate series,
// garbage), reset the connection mid-answer, or flip between healthy and
// not. Each Server serves, on one loopback port, every endpoint the harness
// reads from a deployment: the router's chat completions and health
// (/readiness, /health), an engine's /health_generate, /metrics,
// /get_server_info, /debug/rooms and /debug/probes, so `pdchaos run`,
// `watch`, `doctor` and `soak` can be pointed at it as an external target
// (Server.TargetArgs) and must reach a verdict other than pass.
//
// Like the rest of testkit it is for tests only, and imports contract and
// the standard library alone.
package hostile

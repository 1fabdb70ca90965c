// Package network injects network faults (latency, bandwidth, reset_peer,
// timeout, slicer, limit_data, link down) on the named TCP links of a
// target through an embedded Toxiproxy server: no separate binary, no HTTP
// API, one proxy per link created on first use and interposed through
// faults.Target.Interpose. ResetPeer is done by the counting relay behind
// the proxy rather than by a toxic, and LinkDown stops the proxy (Toxiproxy
// has no "down" toxic).
//
// Toxiproxy's own randomness cannot be seeded, so every toxic is added with
// jitter 0, toxicity 1 and no size variation; anything random (a latency
// drawn from a range) is drawn by pdchaos from a seeded *rand.Rand before
// the fault value is built.
//
// A counting relay sits between each proxy and the link's real address, so
// every fault can report the connections and bytes it saw while it was
// active; a fault that saw no traffic reports Effective false.
//
// This package must not import harness/, suites/ or Ginkgo.
package network

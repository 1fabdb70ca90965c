// Package agents produces the client-side load that wedged production PD
// serving: a swarm of simulated coding agents (long shared system prompt,
// growing multi-turn context, streamed answers, think time, parallel
// sub-requests) that cancel mid-stream by phase, hit client deadlines, get
// killed and restarted, and get killed all at once (the mass ABORT cascade);
// plus open-loop load at a fixed or varying rate through vegeta.
//
// Every request ends with exactly one outcome.Outcome (completed, cancelled,
// error or hung; the record lives in the leaf package agents/outcome so the
// pure checkers can read it without this runtime) delivered to a
// caller-supplied Sink, and live Counters feed a progress display. One seed drives every decision: each agent incarnation draws its
// turns from its own PCG stream, so Plan reproduces the decision sequence of a
// run independently of timing.
//
// The package talks to any OpenAI-compatible endpoint over HTTP. It may import
// engine/model (to compute expected answers) and contract, but must not
// import the engine runtime, faults/, harness/, suites/ or Ginkgo: the
// harness composes it, not the other way round.
package agents

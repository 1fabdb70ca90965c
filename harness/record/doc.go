// Package record is the live side of a run: EventLog writes events.jsonl
// (one monotonic clock, safe for concurrent use) and ReadEventsFile reads it
// back; Recorder scrapes every engine's /metrics and /debug/rooms into the
// log (gauges per rank, ended rooms once with their histories) and, at the
// end, every role's code probe hits (/debug/probes); Watchdog flags, the
// moment a scrape or rooms snapshot shows it, a gauge stuck above zero with
// no progress, a queue growing while nothing completes, and a room past its
// state's deadline; Watch runs it alone (`pdchaos watch`).
//
// It owns IO and goroutines (each with a ctx and a stop path); the event
// schema and the judging live in harness/check. record may import check,
// contract, golang.org/x/sync and Prometheus's text parser
// (prometheus/common, client_model); it must not import the engine, the
// targets (it reads URLs through Sources), faults' injectors, harness,
// suites or Ginkgo.
package record

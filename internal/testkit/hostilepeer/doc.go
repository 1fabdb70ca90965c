// Package hostilepeer drives the bundled engine's sockets the way broken or
// hostile peers would: a decode that is not the real one sending fuzzed,
// truncated, oversized and out-of-order control messages and raw junk to
// prefill, junk notices to decode, malformed KV messages to decode's KV
// listener, and route lookups for ranks prefill does not have. Its Sink
// stands in for a peer whose connections die between two messages, so the
// engine's send-failure paths run on purpose rather than by luck. The engine's
// tests and the gate run it beside normal load: the fixed engine must keep
// answering exactly, refuse and count each message, and leave nothing held.
package hostilepeer

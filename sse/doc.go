// Package sse reads server-sent event streams (text/event-stream) the way
// pdchaos's clients see them: OpenAI-style chat completion chunks from the
// router and SGLang /generate chunks from decode, each carried in `data:`
// lines and ended by a `data: [DONE]` event.
//
// It is the one SSE reader in the product: the router reads decode's stream
// with it, the agents read the router's stream with it, and the tests read
// both through it (internal/testkit). Reads are bounded: an event larger
// than the reader's limit is an error, never an unbounded buffer.
//
// sse imports only the standard library; it must not import anything from
// this module (engine, agents and tests import it, so it sits below them).
package sse

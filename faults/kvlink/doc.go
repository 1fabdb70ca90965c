// Package kvlink injects faults on the prefill→decode KV links of a PD
// deployment through a relay that understands the KV wire format
// (contract.ReadKVFrame): it delays, reorders or drops individual KV
// chunks, the way writes posted on several RDMA rails complete out of
// order, or one is lost and its completion reports an error.
//
// Why a frame relay: a byte-level proxy (Toxiproxy) can slow or cut a
// stream, but cannot make one chunk land after a later one. The relay reads
// whole messages, so it can hold a chunk while chunks on other connections
// pass it, and it counts only what really happened: a chunk is reordered
// when a chunk that reached the relay after it was applied by decode (its
// completion came back) while it was still held; delayed and dropped chunks
// are counted as they go. Aux messages (the completion notice after a last
// chunk) and replies are relayed untouched. A stream that breaks the format
// is counted as malformed, passed on as far as it came and closed; it never
// panics the relay.
//
// What reorders: a connection carries one message at a time (a message,
// then its completion), so the relay reorders across connections. With the
// engine's default (kv_posted_writes 1) a room's chunks go through one
// worker connection in order, and chunks are overtaken by other rooms' (and
// other TP ranks' links') chunks only. With kv_posted_writes N > 1 a worker
// posts up to N chunks of a room at once, each on its own connection (an
// RDMA rail), so chunks of one room overtake each other too
// (Stats.ReorderedInRoom), and the room's completion notice waits for all.
//
// A dropped chunk is not forwarded and both of its connections are closed:
// prefill's write completion fails (its kv-read-failed branch) and the room
// fails on both sides, as a failed RDMA write does. Nothing is acknowledged
// that decode did not receive.
//
// Heal releases every held chunk at once, restores the link and closes the
// relay, waiting (bounded) for messages in flight and for the aux message
// that follows a last chunk, so a heal does not cut a room's completion.
//
// Must not import: engine, harness, agents, suites, Ginkgo. It depends on
// contract (links, the KV format) and faults (the Fault contract) only.
package kvlink

// Package protocol injects protocol-layer faults on the ZMTP control links
// of a PD deployment (decode→prefill registrations, metadata and ABORTs; the
// prefill→decode notify link with status and ABORT_ACK) through a frame
// proxy that understands whole multipart messages.
//
// Why a frame proxy: the races pdchaos hunts depend on message order
// (an ABORT overtaking its room's metadata, a delayed registration, a lost
// or duplicated ABORT). A byte-level proxy (Toxiproxy) cannot express
// those; this one parses the PUSH→PULL direction into messages, classifies
// them (Classify) and applies Rules: delay, hold-and-reorder, drop,
// duplicate. Classify knows every wire dialect of SGLang (NIXL's guarded
// layouts and Mooncake's unguarded ones, with older frame counts); a
// message it cannot place is KindUnknown: relayed untouched, never acted on
// by a rule that does not name it, and counted in Stats and in every
// fault's Evidence ("unknown"). With no rule active the proxy is
// byte-for-byte transparent, and it works with any ZMTP 3.x peer (libzmq
// included). The reverse direction
// (PULL→PUSH: READY, PONG) is copied raw. Held and delayed messages are
// released in order on Release, Heal and Close, so nothing stays stuck
// after a fault heals.
//
// Faults (DelayMessages, AbortBeforeMetadata, HoldMessages, Drop,
// Duplicate) implement faults.Fault: Inject finds the named link (it must
// be contract.LinkZMTP), starts a Proxy to its address and asks the target to
// Interpose it; Heal releases held messages, restores the link and closes
// the proxy.
//
// # Putting the proxy between a real SGLang decode and prefill
//
// A real SGLang deployment cannot be told to Interpose. Decode learns each
// prefill rank's ZMQ address from the prefill bootstrap server (GET /route,
// FetchRanks reads every query dialect) and PUSHes there; prefill PUSHes
// status and ABORT_ACK back to the decode address carried inside
// registrations, TransferInfos and ABORTs. The pieces that put pdchaos in
// both paths (assembled by harness/target's external target, --bootstrap):
//
//  1. A RouteRewriter in front of the bootstrap server answers decode's
//     lookups with the address of a Front per prefill rank (Map); decode's
//     bootstrap address (the router's --prefill URL PORT) must name it.
//  2. Each control Front rewrites decode's address in those messages
//     (RewriteDecodeAddr, per dialect) to a notify Front of pdchaos's, and
//     counts what it cannot rewrite (ErrNotRewritable).
//  3. A Front's Redirect puts a fault's Proxy (or Toxiproxy) behind it; a
//     live connection moves between messages, so nothing is lost and the
//     peers never reconnect (SGLang registers only once per pair).
//
// Decode caches /route answers, so the rewriter must run before decode's
// first lookup of that prefill (or decode restarts).
//
// Must not import: harness/, suites/, Ginkgo. It depends on contract (Link),
// zmtp (frame codec) and faults (the Fault contract) only.
package protocol

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
// prefill rank's ZMQ address from the prefill bootstrap server: GET
// /route?prefill_dp_rank=…&target_tp_rank=… answers {"rank_ip", "rank_port"}
// and decode then PUSHes to tcp://rank_ip:rank_port. So:
//
//  1. Start a Proxy per prefill rank: Listen(ctx, "<rank_ip>:<rank_port>").
//  2. Serve a RouteRewriter in front of the bootstrap server
//     (NewRouteRewriter(bootstrapURL)), and Map("<rank_ip>:<rank_port>",
//     proxy.Addr()) for each rank.
//  3. Point decode's bootstrap address (the router's bootstrap_host/port
//     for prefill, --disaggregation-bootstrap-port) at the RouteRewriter.
//     Decode then registers and sends metadata and ABORTs through the
//     proxy. Note decode caches /route answers per connection key, so
//     start the rewriter before traffic (or restart decode).
//
// The proxy must listen on an address decode can reach (not 127.0.0.1 if
// decode runs on another host).
//
// Must not import: harness/, suites/, Ginkgo. It depends on engine (Link),
// zmtp (frame codec) and faults (the Fault contract) only.
package protocol

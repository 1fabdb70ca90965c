package core

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// AbortResends is how many times decode resends an ABORT that no prefill
// rank acknowledged within the ACK timeout before it gives up: the room's
// pages are then freed after (AbortResends+1) ACK timeouts in all, and the
// prefill's name is retired so a write still in flight is refused instead
// of landing in the freed pages. A lost ABORT is the common case (a reset
// control connection, a dropped frame); a prefill that misses every resend
// is treated as gone.
const AbortResends = contract.AbortResends

// HeartbeatFailures is SGLang's HEARTBEAT_MAX_FAILURE: the consecutive
// missed heartbeats after which decode declares a prefill lost.
const HeartbeatFailures = contract.HeartbeatFailures

// Heartbeat judges decode's heartbeats to its prefill peers, as SGLang's
// heartbeat thread does: HeartbeatFailures misses in a row declare a peer
// lost, and a 200 resets the count. The count also resets once a peer is
// declared lost, so a peer that comes back is judged afresh (without it, a
// second loss of the same peer would never be declared: the count would
// run past the threshold instead of reaching it). Decode.OnHeartbeat
// feeds it each answer the runtime got. The zero value is ready.
type Heartbeat struct {
	misses map[string]int
}

// Observe records one heartbeat to peer (ok: it answered 200 in time) and
// reports whether this miss declares the peer lost.
func (h *Heartbeat) Observe(peer string, ok bool) (lost bool) {
	if h.misses == nil {
		h.misses = map[string]int{}
	}
	if ok {
		delete(h.misses, peer)
		return false
	}
	h.misses[peer]++
	if h.misses[peer] < HeartbeatFailures {
		return false
	}
	delete(h.misses, peer)
	return true
}

// Misses is peer's current count of consecutive misses.
func (h *Heartbeat) Misses(peer string) int { return h.misses[peer] }

// agentName is one name decode handed out for a rank towards a prefill
// peer in one epoch.
type agentName struct {
	rank      int
	bootstrap string
	epoch     int
}

// AgentName is the name decode rank registers under with the prefill behind
// bootstrap, and that its TransferInfos to that prefill carry. On NIXL it
// is the rank's process-unique name plus the peer and its epoch: every time
// decode declares that peer lost (or gives up on its ACKs) the epoch moves
// on and the old name is retired, as NIXL drops a remote agent, so a write
// the old peer still had in flight is refused (OnChunk's caller asks
// AdmitKV) rather than landing in pages decode has freed and reused.
// Mooncake's session_id is the rank's KV address itself and cannot carry
// an epoch: there the name is the same in every epoch.
func (d *Decode) AgentName(rank int, bootstrap string) string {
	base := d.cfg.Agents[rank].Name
	if !d.wire.table().epochNames {
		return base
	}
	e := d.epochs[bootstrap]
	name := fmt.Sprintf("%s@%s#%d", base, bootstrap, e)
	d.names[name] = agentName{rank: rank, bootstrap: bootstrap, epoch: e}
	return name
}

// Registration is decode rank's registration with the prefill behind
// bootstrap, under the current epoch's name: the runtime sends it first on
// every new control connection, and the core queues it again (Outbound)
// when it retires a name on a route it keeps.
func (d *Decode) Registration(rank int, bootstrap string) [][]byte {
	a := d.cfg.Agents[rank]
	return d.wire.Registration(Registration{DecodeIP: a.IP, DecodePort: a.NotifyPort, AgentName: d.AgentName(rank, bootstrap),
		KVAddr: a.KVAddr, KVBase: a.KVBase, DecodeTP: len(d.ranks), DecodeRank: rank, DstNumSlots: 1024})
}

// Epoch is the current epoch of decode's name towards the prefill behind
// bootstrap: 0 until that peer is first retired.
func (d *Decode) Epoch(bootstrap string) int { return d.epochs[bootstrap] }

// AdmitKV decides whether a KV message for room addressed to agent may
// touch rank's pages, before anything is written. It refuses (and counts)
// a message addressed to a name decode retired (a prefill it declared
// lost, still writing: LostPeerWrites) and one addressed to a name it never
// gave out (a predecessor decode process's registration: RefuseChunk).
func (d *Decode) AdmitKV(now time.Time, rank int, room uint64, id int, agent string) bool {
	if !d.wire.table().epochNames {
		if a := d.cfg.Agents[rank]; agent == d.wire.KVTarget(a.Name, a.KVBase) {
			return true
		}
		d.RefuseChunk(now, rank, room, id, agent)
		return false
	}
	n, ok := d.names[agent]
	switch {
	case !ok || n.rank != rank:
		d.RefuseChunk(now, rank, room, id, agent)
		return false
	case n.epoch < d.epochs[n.bootstrap]:
		d.probes.Hit(contract.ProbeDecodeChunkLostPeer)
		d.LostPeerWrites++
		d.StrayChunks++
		d.hist.NoteKnown(now, room, "decode", rank, contract.RoomEventLostPeerWrite, fmt.Sprintf("chunk %d addressed to retired name %q refused (prefill %s was declared lost)", id, agent, n.bootstrap))
		return false
	}
	return true
}

// retirePeer moves decode's name towards bootstrap to a new epoch: every
// write addressed to the old name is refused from now on, so the pages of
// aborted rooms still waiting for the peer's ACK can be freed at once.
//
// Where the wire cannot retire a name (Mooncake: the session_id is the KV
// address), nothing is freed: a prefill that was only stopped still writes
// where its TransferInfos pointed when it continues, so the pages wait for
// its ACK, which it sends once its in-flight writes have drained.
func (d *Decode) retirePeer(now time.Time, bootstrap string) {
	d.epochs[bootstrap]++
	for _, room := range slices.Sorted(maps.Keys(d.awaiting)) {
		if d.awaiting[room].bootstrap != bootstrap {
			continue
		}
		if !d.fenced() {
			d.holdUnfenced(now, room, "prefill "+bootstrap+" lost")
			continue
		}
		d.probes.Hit(contract.ProbeDecodeRetiredPeerFreesPages)
		d.hist.Note(now, room, "decode", 0, contract.RoomEventPagesFreed, "prefill's name retired: no write of it can land any more")
		d.freeAwaiting(room)
	}
}

// fenced says a retired name refuses the old peer's writes (NIXL's agent
// names carry decode's epoch; Mooncake's session_id cannot).
func (d *Decode) fenced() bool { return d.wire.table().epochNames }

// holdUnfenced keeps room's pages until its prefill acknowledges the ABORT,
// however long that takes: its writes cannot be refused, and the ACK comes
// only after they have drained (a prefill that restarted acknowledges at
// once: it has nothing in flight).
func (d *Decode) holdUnfenced(now time.Time, room uint64, why string) {
	d.probes.Hit(contract.ProbeDecodeUnfencedPagesHeld)
	d.hist.NoteKnown(now, room, "decode", 0, contract.RoomEventPagesHeldUnfenced, why+": the wire cannot refuse its writes, so the pages wait for its ACK")
}

// failPeerRooms fails every room paired with bootstrap that has not
// finished its transfer (those still in prealloc too, with withPrealloc):
// their TransferInfo named a retired name, or the peer is gone, so they
// can never complete. Their pages are freed when the scheduler sees
// Failed; no write of the old name can land in them.
func (d *Decode) failPeerRooms(now time.Time, bootstrap, why string, withPrealloc bool) int {
	n := 0
	for _, req := range d.byRoom {
		if req.Bootstrap != bootstrap || req.stage() == stageRunning || req.flipped {
			continue
		}
		switch {
		case req.stage() == stageTransfer:
			d.probes.Hit(contract.ProbeDecodePrefillLostRoom)
		case !withPrealloc:
			continue // its TransferInfo will name the new epoch
		default:
			d.probes.Hit(contract.ProbeDecodePrefillLostPrealloc)
		}
		// A room past its TransferInfo can still be written; where the
		// wire cannot refuse that, its pages go to wait for an ACK
		// instead of back to the pool (pollTransfers).
		req.unfenced = req.stage() == stageTransfer && !d.fenced()
		for _, rk := range d.ranks {
			rk.status.Update(now, req.Room, Failed, WriterReceiver, why)
		}
		n++
	}
	return n
}

// reregister queues the registration of decode's current name with the
// prefill behind bootstrap for every rank, on the route decode keeps: it
// goes before any TransferInfo that names it.
func (d *Decode) reregister(bootstrap string) {
	for r := range d.ranks {
		d.out = append(d.out, DecodeOut{Bootstrap: bootstrap, Rank: r, Frames: d.Registration(r, bootstrap)})
	}
}

// expireAcks handles aborted rooms whose ACK timeout passed: the ABORT is
// resent to the ranks that did not acknowledge it, up to AbortResends
// times; after the last, the pages are freed and the prefill's name
// retired, so a late write is refused rather than landing in them.
func (d *Decode) expireAcks(now time.Time) {
	due := false // most steps: none is due, and nothing to sort
	for _, aw := range d.awaiting {
		if now.Sub(aw.since) > d.cfg.AckTimeout {
			due = true
			break
		}
	}
	if !due {
		return
	}
	var giveUp []string
	// Rooms in room order, not map order: the free list is LIFO, so the
	// order decides which pages the next request gets, and what is resent
	// goes out in order; a simulated run must replay exactly.
	for _, room := range slices.Sorted(maps.Keys(d.awaiting)) {
		aw := d.awaiting[room]
		if now.Sub(aw.since) <= d.cfg.AckTimeout {
			continue
		}
		if aw.resends >= AbortResends && !d.fenced() {
			// No name to retire: freeing now could hand pages a stalled
			// prefill still writes. Keep asking; the pages wait.
			d.probes.Hit(contract.ProbeDecodeUnfencedAckResent)
		}
		if aw.resends < AbortResends || !d.fenced() {
			aw.resends++
			aw.since = now
			d.probes.Hit(contract.ProbeDecodeAbortResent)
			for r := range d.ranks {
				if aw.acked[r] {
					continue
				}
				a := d.cfg.Agents[r]
				d.out = append(d.out, DecodeOut{Bootstrap: aw.bootstrap, Rank: r, Frames: d.wire.Abort(Abort{Room: room, DecodeIP: a.IP, DecodePort: a.NotifyPort})})
			}
			note := fmt.Sprintf("no ABORT_ACK within %s: resend %d of %d", d.cfg.AckTimeout, aw.resends, AbortResends)
			if aw.resends > AbortResends {
				note = fmt.Sprintf("no ABORT_ACK within %s: resend %d; the wire cannot retire prefill's name, so the pages wait for its ACK", d.cfg.AckTimeout, aw.resends)
			}
			d.hist.Note(now, room, "decode", 0, contract.LookupBackstop(contract.BackstopAbortResend).Kind, note)
			continue
		}
		d.probes.Hit(contract.ProbeDecodeAckTimeoutFree)
		d.hist.NoteBackstop(now, room, "decode", 0, contract.BackstopAck)
		d.freeAwaiting(room)
		if aw.bootstrap != "" && !slices.Contains(giveUp, aw.bootstrap) {
			giveUp = append(giveUp, aw.bootstrap)
		}
	}
	slices.Sort(giveUp) // map order must not pick the order of what is sent
	for _, b := range giveUp {
		d.retirePeer(now, b)
		// The regressions that model a decode without deadlines keep
		// their wedges: the rooms are left to the refused writes.
		if d.backstops() {
			d.failPeerRooms(now, b, "prefill "+b+" did not acknowledge an ABORT: its name is retired", false)
		}
		d.reregister(b)
	}
}

package core

import (
	"fmt"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// What decode does with a KV message its listener could not take as
// sent: the runtime reads the bytes and reports what it found; the
// decision and its count are here, so the simulator's stranger reaches
// the same branches the live KV listener does.

// OnKVUnreadable records a KV message that broke off mid-frame or does
// not parse (why says how), for room if it got as far as naming one (0
// otherwise). The runtime drops the connection it came on.
func (d *Decode) OnKVUnreadable(now time.Time, rank int, room uint64, why string) {
	d.probes.Hit(contract.ProbeDecodeKVReadError)
	d.RefuseKV(now, rank, room, why)
}

// AdmitKVRank checks that a KV message arriving on rank listener's
// socket names that rank: one for another rank (a prefill that paired
// ranks wrongly, or a peer that is not prefill) is refused as malformed
// before anything is written, and the runtime drops its connection.
func (d *Decode) AdmitKVRank(now time.Time, listener, named int, room uint64) bool {
	if named == listener {
		return true
	}
	d.probes.Hit(contract.ProbeDecodeKVWrongRank)
	d.RefuseKV(now, listener, room, fmt.Sprintf("kv message for rank %d on rank %d's listener", named, listener))
	return false
}

// OnKVReplyFailed records that decode could not send a KV message's write
// completion back (the writer's connection broke after the message came
// in). What decode did with the message stands; the writer sees its write
// fail and decides for itself.
func (d *Decode) OnKVReplyFailed(now time.Time, rank int, room uint64) {
	d.probes.Hit(contract.ProbeDecodeKVReplyFailed)
	d.hist.NoteKnown(now, room, "decode", rank, contract.RoomEventKVReplyFailed, "the write completion could not be sent back")
}

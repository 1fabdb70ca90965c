package core

import (
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// Tables is the size of one rank's per-room tables at a moment, for the
// engine's pdchaos:table_* gauges (contract.TableGauges and friends): a
// table that keeps an entry after its room ended grows without bound on a
// long soak while every queue gauge reads 0, so each is exported and
// judged. Counts only, plus one scan for the overdue entries.
type Tables struct {
	// Status is the rank's room status entries.
	Status int
	// Tombstones is the rank's abort tombstones (time-bounded on prefill).
	Tombstones int
	// TombstonesOverdue counts tombstones older than their TTL at the
	// table's last expiry sweep, which should have forgotten them.
	TombstonesOverdue int
	// Infos is the rank's TransferInfos (prefill).
	Infos int
	// InfosOverdue counts TransferInfos no request owns that were older
	// than the sweep age at the last sweep (prefill).
	InfosOverdue int
	// PendingAck and PendingFail are ABORT_ACKs and failure notices
	// waiting for a worker to let go of the room's chunk (prefill).
	PendingAck, PendingFail int
	// WorkersBusy is the rank's transfer workers holding a chunk (prefill).
	WorkersBusy int
	// Records is the side's open history records and OrphanRecords those
	// of them nothing will retire: no rank holds the room's status and no
	// tombstone of it is left. Side-wide: the same on every rank.
	Records, OrphanRecords int
}

// Gauges returns the tables as rank's pdchaos:table_* gauges and
// contract.MetricTransferWorkersBusy, the one mapping every runtime
// exports (the live engine's collector, the simulator's scrape). The
// history is one per side: its two gauges go on rank 0 only, so a sum over
// ranks counts each record once.
func (t Tables) Gauges(rank int) map[string]float64 {
	g := map[string]float64{
		contract.MetricTransferWorkersBusy: float64(t.WorkersBusy),
		contract.MetricTableStatus:         float64(t.Status),
		contract.MetricTableTombstones:     float64(t.Tombstones),
		contract.MetricTableInfos:          float64(t.Infos),
		contract.MetricTablePendingAck:     float64(t.PendingAck),
		contract.MetricTablePendingFail:    float64(t.PendingFail),
		contract.MetricTombstonesOverdue:   float64(t.TombstonesOverdue),
		contract.MetricInfosOverdue:        float64(t.InfosOverdue),
	}
	if rank == 0 {
		g[contract.MetricTableRecords] = float64(t.Records)
		g[contract.MetricTableOrphanRecords] = float64(t.OrphanRecords)
	}
	return g
}

// Tables returns rank's table sizes.
func (p *Prefill) Tables(rank int) Tables {
	r := p.ranks[rank]
	t := Tables{Status: len(r.status.status), Tombstones: len(r.status.tombstones), TombstonesOverdue: r.status.overdueTombstones(),
		Infos: len(r.infos), PendingAck: len(r.pendingAck), PendingFail: len(r.pendingFail), WorkersBusy: len(r.held)}
	if swept := r.status.expiredAt; !swept.IsZero() {
		// The sweep that ran at swept cleared every orphan info older than
		// the bootstrap timeout (sweep); what is left of those is overdue.
		for room, info := range r.infos {
			if _, owned := p.byRoom[room]; !owned && swept.Sub(info.at) > p.cfg.BootstrapTimeout {
				t.InfosOverdue++
			}
		}
	}
	t.Records, t.OrphanRecords = p.hist.openRecords(p.statusTables())
	return t
}

// Tables returns rank's table sizes.
func (d *Decode) Tables(rank int) Tables {
	st := d.ranks[rank].status
	t := Tables{Status: len(st.status), Tombstones: len(st.tombstones), TombstonesOverdue: st.overdueTombstones()}
	tables := make([]*StatusTable, len(d.ranks))
	for i, rk := range d.ranks {
		tables[i] = rk.status
	}
	t.Records, t.OrphanRecords = d.hist.openRecords(tables)
	return t
}

// StatusChanges is a count that moves whenever a room's status changes on
// any rank (set, changed or removed): a runtime need not wake the
// scheduler for an event that left it where it was, since the scheduler
// acts on statuses and deadlines only.
func (p *Prefill) StatusChanges() uint64 {
	var n uint64
	for _, r := range p.ranks {
		n += r.status.changes
	}
	return n
}

// Settled reports whether room's status on rank is terminal or absent,
// without counting a probe (Check would, for an absent room under
// unknown-room-waiting): a worker's change the scheduler acts on.
func (p *Prefill) Settled(rank int, room uint64) bool {
	s, ok := p.ranks[rank].status.status[room]
	return !ok || s.Terminal()
}

func (p *Prefill) statusTables() []*StatusTable {
	out := make([]*StatusTable, len(p.ranks))
	for i, r := range p.ranks {
		out[i] = r.status
	}
	return out
}

// noteExpiry records an expiry sweep at now with ttl, so overdue
// tombstones are measured against the sweep that should have removed
// them, not the scrape: a scheduler a fault stalls sweeps late, which is
// no leak.
func (t *StatusTable) noteExpiry(now time.Time, ttl time.Duration) {
	t.expiredAt, t.ttl = now, ttl
}

// overdueTombstones counts tombstones older than ttl at the last expiry
// sweep; 0 before the first.
func (t *StatusTable) overdueTombstones() int {
	if t.expiredAt.IsZero() {
		return 0
	}
	n := 0
	for _, at := range t.tombstones {
		if t.expiredAt.Sub(at) > t.ttl {
			n++
		}
	}
	return n
}

// openRecords counts the open (not retired) records and those no table
// of the side will retire: a record retires when its room's status is
// cleared (Clear) or its tombstone expires (Forget), so one whose room is
// in no status table and no tombstone stays for good.
func (h *History) openRecords(tables []*StatusTable) (open, orphans int) {
	if h == nil {
		return 0, 0
	}
	for room := range h.rooms {
		kept := false
		for _, t := range tables {
			if t.Has(room) || t.isTombstoned(room) {
				kept = true
				break
			}
		}
		if !kept {
			orphans++
		}
	}
	return len(h.rooms), orphans
}

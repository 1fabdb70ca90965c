package contract

// Metric names, exactly as SGLang exposes them, so the same watch and checks
// work on a real deployment.
const (
	MetricPrefillBootstrapQueue = "sglang:num_prefill_bootstrap_queue_reqs"
	MetricPrefillInflightQueue  = "sglang:num_prefill_inflight_queue_reqs"
	MetricDecodePreallocQueue   = "sglang:num_decode_prealloc_queue_reqs"
	MetricDecodeTransferQueue   = "sglang:num_decode_transfer_queue_reqs"
	MetricRunning               = "sglang:num_running_reqs"
	MetricQueue                 = "sglang:num_queue_reqs"
	MetricTokenUsage            = "sglang:token_usage"
	MetricBootstrapFailed       = "sglang:num_bootstrap_failed_reqs_total"
	MetricTransferFailed        = "sglang:num_transfer_failed_reqs_total"
	MetricRequests              = "sglang:num_requests_total"
	MetricGenerationTokens      = "sglang:generation_tokens_total"
	// pdchaos additions (not in SGLang): evidence for checks and faults.
	MetricBootstrapLoopAlive = "pdchaos:bootstrap_loop_alive"
	MetricMalformedControl   = "pdchaos:malformed_control_msgs_total"
	MetricStrayChunks        = "pdchaos:stray_kv_chunks_total"
	// MetricMalformedKV counts KV messages decode refused as malformed
	// (a broken or truncated stream, a chunk for another rank, a payload
	// that is not whole tokens), so a hostile peer's refusals are seen.
	MetricMalformedKV = "pdchaos:malformed_kv_msgs_total"
	// MetricRefusedPeers counts ZMTP connections to a control or notify
	// socket dropped for what the peer sent (not ZMTP, a malformed or
	// over-limit frame or message, a message cut short), per rank socket.
	MetricRefusedPeers  = "pdchaos:zmtp_refused_peers_total"
	MetricForeignWrites = "pdchaos:kv_foreign_writes_total"
	MetricAwaitingAck   = "pdchaos:decode_pages_awaiting_ack_reqs"
	MetricSchedulerHung = "pdchaos:scheduler_hung"
	// Decode page accounting, per TP rank: pages some room owns, pages on
	// the free list, the pool's size, and pages owned twice (listed free
	// twice, or free while a room owns them). In use plus free must equal
	// the pool and owned-twice must be 0; a page freed twice breaks both.
	MetricPagesUsed       = "pdchaos:decode_pages_used"
	MetricPagesFree       = "pdchaos:decode_pages_free"
	MetricPagesTotal      = "pdchaos:decode_pages_total"
	MetricPagesOwnedTwice = "pdchaos:decode_pages_owned_twice"
	// MetricTransferWorkersBusy counts a prefill rank's transfer workers
	// holding a chunk: a slot (SlotGauges), back to 0 once idle. A worker
	// never released after an aborted room's chunk shows up here.
	MetricTransferWorkersBusy = "pdchaos:prefill_transfer_workers_busy"
)

// The engine's per-room tables, per side and TP rank (pdchaos only; the
// one table of them, with each one's rule, is EngineTables).
const (
	// MetricTableStatus is a rank's room status entries (prefill and decode).
	MetricTableStatus = "pdchaos:table_status_entries"
	// MetricTableTombstones is a rank's abort tombstones: time-bounded
	// (prefill forgets them after 4 x bootstrap timeout), so judged by
	// MetricTombstonesOverdue, not by a baseline.
	MetricTableTombstones = "pdchaos:table_tombstones"
	// MetricTableInfos is a prefill rank's TransferInfos (decode's metadata).
	MetricTableInfos = "pdchaos:table_transfer_infos"
	// MetricTablePendingAck is a prefill rank's ABORT_ACKs waiting for a
	// worker to let go of the room's chunk.
	MetricTablePendingAck = "pdchaos:table_pending_acks"
	// MetricTablePendingFail is a prefill rank's failure notices waiting
	// for a worker to let go of the room's chunk.
	MetricTablePendingFail = "pdchaos:table_pending_fail_notices"
	// MetricTableRecords is a side's open room history records (held rooms,
	// and note-only records of aborted rooms, which go with their
	// tombstone): exported on tp_rank 0, time-bounded, not judged.
	MetricTableRecords = "pdchaos:table_history_records"
	// MetricTableOrphanRecords is a side's open history records that
	// nothing will retire: no rank holds the room and no tombstone of it
	// is left (tp_rank 0).
	MetricTableOrphanRecords = "pdchaos:table_history_orphan_records"
	// MetricTombstonesOverdue is a rank's tombstones older than their TTL
	// at the table's last expiry sweep: the sweep should have forgotten
	// them. Measured against the sweep, not the scrape, so a stalled
	// scheduler (a fault) is not a leak.
	MetricTombstonesOverdue = "pdchaos:table_tombstones_overdue"
	// MetricInfosOverdue is a prefill rank's orphan TransferInfos (no
	// request owns the room) older than the sweep age (the bootstrap
	// timeout) at the last sweep.
	MetricInfosOverdue = "pdchaos:table_transfer_infos_overdue"
)

// Label names the harness reads to combine series as SGLang exports them.
const (
	LabelTPRank     = "tp_rank"
	LabelDPRank     = "dp_rank"
	LabelPPRank     = "pp_rank"
	LabelPriority   = "priority"
	LabelEngineType = "engine_type"
)

// MetricAliases maps older SGLang metric names onto today's: the one alias
// table. A scrape reads an alias as its current name when the current name
// is absent (sglang-wire.md section 5).
func MetricAliases() map[string]string {
	return map[string]string{
		"sglang:num_prefill_prealloc_queue_reqs": MetricPrefillBootstrapQueue, // v0.5-era name
		"sglang:num_prefill_infight_queue_reqs":  MetricPrefillInflightQueue,  // very old typo
	}
}

// PageGauges are the decode page accounting gauges (pdchaos only).
func PageGauges() []string {
	return []string{MetricPagesUsed, MetricPagesFree, MetricPagesTotal, MetricPagesOwnedTwice}
}

// TableRule is how slots-released judges one of the engine's table gauges.
type TableRule int

// Table rules.
const (
	// TableBaseline: back to its baseline (the scrape before load) after
	// the drain, per rank, like a slot gauge.
	TableBaseline TableRule = iota
	// TableNotOverdue: 0 in every scrape (entries the table's own expiry
	// should have removed).
	TableNotOverdue
	// TableTimeBounded: shrinks on a timer, not when the load stops;
	// exported for the operator and judged through an overdue gauge.
	TableTimeBounded
)

// EngineTable is one gauge of the engine's per-room tables.
type EngineTable struct {
	Gauge string
	Rule  TableRule
}

// EngineTables is the one table of the engine's table gauges and their
// rules (pdchaos only: judged where present, never needed, so SGLang,
// which has none, loses nothing). The busy transfer workers, a slot, are
// in SlotGauges.
func EngineTables() []EngineTable {
	return []EngineTable{
		{MetricTableStatus, TableBaseline},
		{MetricTableInfos, TableBaseline},
		{MetricTablePendingAck, TableBaseline},
		{MetricTablePendingFail, TableBaseline},
		{MetricTableOrphanRecords, TableBaseline},
		{MetricTombstonesOverdue, TableNotOverdue},
		{MetricInfosOverdue, TableNotOverdue},
		{MetricTableTombstones, TableTimeBounded},
		{MetricTableRecords, TableTimeBounded},
	}
}

func tablesWith(rule TableRule) []string {
	var out []string
	for _, t := range EngineTables() {
		if t.Rule == rule {
			out = append(out, t.Gauge)
		}
	}
	return out
}

// TableGauges are the engine tables that are not time-bounded: each back
// to its baseline after the drain (TableBaseline).
func TableGauges() []string { return tablesWith(TableBaseline) }

// OverdueGauges count table entries their table's own expiry should have
// removed: 0 in every scrape (TableNotOverdue).
func OverdueGauges() []string { return tablesWith(TableNotOverdue) }

// TimeBoundedGauges are the tables that shrink on a timer
// (TableTimeBounded): exported, judged through OverdueGauges.
func TimeBoundedGauges() []string { return tablesWith(TableTimeBounded) }

// NeededGauges are the SGLang gauge families slots-released needs from an
// engine of engineType ("prefill", "decode", anything else: all). Without
// one the check is inconclusive: an absent family is not a zero.
// pdchaos-only gauges are judged where present and never needed.
func NeededGauges(engineType string) []string {
	switch engineType {
	case "prefill":
		return []string{MetricPrefillBootstrapQueue, MetricPrefillInflightQueue, MetricRunning, MetricQueue}
	case "decode":
		return []string{MetricDecodePreallocQueue, MetricDecodeTransferQueue, MetricRunning, MetricQueue, MetricTokenUsage}
	}
	return []string{MetricPrefillBootstrapQueue, MetricPrefillInflightQueue, MetricDecodePreallocQueue,
		MetricDecodeTransferQueue, MetricRunning, MetricQueue, MetricTokenUsage}
}

// QueueGauges are the gauges of requests waiting for the engine's own
// resources: decode's prealloc queue (pages) and the waiting queue (a batch
// slot). The live watchdog flags them growing while the engine completes
// nothing. Queues that wait on the peer (prefill's bootstrap and inflight,
// decode's transfer queue) are left to the rooms' deadlines and the stuck
// gauge rule: under load they grow whenever the peer is the bottleneck.
func QueueGauges() []string {
	return []string{MetricDecodePreallocQueue, MetricQueue}
}

// MetricLabels is SGLang's label set on every engine metric.
var MetricLabels = []string{"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"}

// SlotGauges are the gauges that must return to 0 once a PD deployment is
// idle: every PD queue, running and waiting requests, pages held for an
// ACK, and prefill transfer workers holding a chunk (the last two pdchaos
// only: judged where present). A wedge is one of these stuck above 0. KV
// usage is judged apart (MetricTokenUsage): it must return to its
// baseline, which on a real deployment need not be 0.
func SlotGauges() []string {
	return []string{MetricPrefillBootstrapQueue, MetricPrefillInflightQueue,
		MetricDecodePreallocQueue, MetricDecodeTransferQueue, MetricRunning,
		MetricQueue, MetricAwaitingAck, MetricTransferWorkersBusy}
}

// ProgressCounters are counters whose movement means the engine is doing
// work, so a gauge that sits still beside them is not (yet) a wedge.
func ProgressCounters() []string {
	return []string{MetricGenerationTokens, MetricRequests,
		MetricBootstrapFailed, MetricTransferFailed}
}

// EngineGauges lists every gauge the bundled engine exports.
func EngineGauges() []string {
	out := append(append(SlotGauges(), MetricTokenUsage, MetricBootstrapLoopAlive, MetricSchedulerHung), PageGauges()...)
	for _, t := range EngineTables() {
		out = append(out, t.Gauge)
	}
	return out
}

// EngineCounters lists every counter the bundled engine exports.
func EngineCounters() []string {
	return append(ProgressCounters(), MetricMalformedControl, MetricStrayChunks, MetricForeignWrites, MetricMalformedKV, MetricRefusedPeers)
}

// MetricProbeHits counts hits of each code probe (label LabelProbe, plus
// MetricLabels); every probe of the role is exported, zero ones too.
const MetricProbeHits = "pdchaos:probe_hits_total"

// LabelProbe is the label naming the probe on MetricProbeHits.
const LabelProbe = "probe"

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
)

// MetricLabels is SGLang's label set on every engine metric.
var MetricLabels = []string{"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"}

// SlotGauges are the gauges that must return to 0 once a PD deployment is
// idle: every PD queue, running and waiting requests, and pages held for an
// ACK. A wedge is one of these stuck above 0. KV usage is judged apart
// (MetricTokenUsage): it must return to its baseline, which on a real
// deployment need not be 0.
func SlotGauges() []string {
	return []string{MetricPrefillBootstrapQueue, MetricPrefillInflightQueue,
		MetricDecodePreallocQueue, MetricDecodeTransferQueue, MetricRunning,
		MetricQueue, MetricAwaitingAck}
}

// ProgressCounters are counters whose movement means the engine is doing
// work, so a gauge that sits still beside them is not (yet) a wedge.
func ProgressCounters() []string {
	return []string{MetricGenerationTokens, MetricRequests,
		MetricBootstrapFailed, MetricTransferFailed}
}

// EngineGauges lists every gauge the bundled engine exports.
func EngineGauges() []string {
	return append(SlotGauges(), MetricTokenUsage, MetricBootstrapLoopAlive, MetricSchedulerHung)
}

// EngineCounters lists every counter the bundled engine exports.
func EngineCounters() []string {
	return append(ProgressCounters(), MetricMalformedControl, MetricStrayChunks, MetricForeignWrites, MetricMalformedKV, MetricRefusedPeers)
}

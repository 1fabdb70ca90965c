#!/usr/bin/env python3
"""Regenerates the recorded event logs the checker tests read.

good.jsonl passes every checker; bad-<check>.jsonl breaks exactly that
checker (faults-verified and load-floor are inconclusive by design)."""
import copy, json

S = 1_000_000_000
P, D = "http://127.0.0.1:30001/metrics", "http://127.0.0.1:30002/metrics"
PE, DE = "http://127.0.0.1:30001", "http://127.0.0.1:30002"
BASE = "2026-11-29T10:00:00Z"
GAUGES = ["sglang:num_prefill_bootstrap_queue_reqs", "sglang:num_prefill_inflight_queue_reqs",
          "sglang:num_decode_prealloc_queue_reqs", "sglang:num_decode_transfer_queue_reqs",
          "sglang:num_running_reqs", "sglang:num_queue_reqs", "pdchaos:decode_pages_awaiting_ack_reqs",
          "sglang:token_usage"]

def scrape(t, src, busy, tokens):
    g = {k: 0.0 for k in GAUGES}
    if busy:
        g["sglang:num_running_reqs"] = busy
    return {"t": t, "type": "scrape", "source": src,
            "scrape": {"gauges": g, "counters": {"sglang:generation_tokens_total": tokens}}}

def room(r, state, events=None):
    return {"room": r, "side": "prefill", "state": state, "ranks": {"0": state}, "cleared": False,
            "last_state": "", "events": events or [], "created": "2026-11-29T10:00:01Z",
            "updated": "2026-11-29T10:00:03Z"}

def good():
    ev = [{"t": 1, "type": "run", "run": {"scenario": "testdata", "seed": 42, "target": "bundled", "base_wall": BASE}},
          {"t": 2, "type": "phase", "phase": "warmup"}]
    for i in range(8):
        t = (i + 1) * S // 4
        busy = 3 if i < 6 else 0
        ev += [scrape(t, P, busy, i * 10), scrape(t, D, busy, i * 100)]
        ev.append({"t": t, "type": "rooms", "source": PE,
                   "rooms": {"role": "prefill", "held": [room(100 + i, "Transferring")] if busy else [], "cleared": i}})
    ev.append({"t": 2 * S, "type": "fault", "fault": {"window": 0, "fault": "pause-transfer-workers(prefill/-1/worker=-1)",
               "layer": "engine", "planned_start_ns": S, "planned_end_ns": 2 * S, "applied": True, "start_ns": S,
               "end_ns": 2 * S, "evidence": {"fault": "pause", "effective": True, "counters": {"held": 3}}}})
    for i in range(30):
        o = {"kind": "completed", "source": "agent", "agent": i % 6, "incarnation": 0, "session": 0, "turn": i,
             "start": i * S // 20, "end": i * S // 20 + S // 10, "ttft": S // 50, "tokens": 8, "max_tokens": 8,
             "room": 1000 + i, "has_room": True}
        if i % 4 == 1:
            o.update(kind="cancelled", phase="queued", reason="cancel", tokens=0)
        if i == 7:
            o.update(kind="cancelled", phase="decode", reason="kill", tokens=3)
        if i == 29:
            o.update(kind="error", status=503, message="decode failed")
        ev.append({"t": o["end"], "type": "outcome", "outcome": o})
    ev += [{"t": 3 * S, "type": "phase", "phase": "drain"},
           {"t": 3 * S + 1, "type": "drain", "drain": {"settled": True, "waited": 100}}]
    for i in range(3):
        ev.append({"t": 3 * S + 10 + i, "type": "probe", "probe": {"ok": True, "latency": 5_000_000}})
    ev += [scrape(4 * S, P, 0, 100), scrape(4 * S, D, 0, 1000),
           {"t": 4 * S + 1, "type": "rooms", "source": PE, "rooms": {"role": "prefill", "held": [], "cleared": 12, "final": True}},
           {"t": 4 * S + 2, "type": "rooms", "source": DE, "rooms": {"role": "decode", "held": [], "cleared": 12, "final": True}},
           {"t": 4 * S + 3, "type": "leaks", "leaks": {"checked": True, "leaked": 0}},
           {"t": 4 * S + 4, "type": "end", "end": {}}]
    return ev

def write(name, ev):
    with open(name, "w") as f:
        for e in ev:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")

def find(ev, pred):
    return [e for e in ev if pred(e)]

g = good()
write("good.jsonl", g)

b = copy.deepcopy(g)
fin = find(b, lambda e: e["type"] == "rooms" and e["rooms"].get("final") and e["source"] == PE)[0]
fin["rooms"]["held"] = [room(42, "WaitingForInput", [
    {"at": "2026-11-29T10:00:01Z", "side": "prefill", "rank": 0, "kind": "status", "state": "Bootstrapping"},
    {"at": "2026-11-29T10:00:02Z", "side": "prefill", "rank": 0, "kind": "abort", "state": "Bootstrapping", "detail": "ABORT before metadata: dropped"},
    {"at": "2026-11-29T10:00:03Z", "side": "prefill", "rank": 0, "kind": "status", "state": "WaitingForInput", "detail": "metadata"}])]
write("bad-rooms-terminal.jsonl", b)

b = copy.deepcopy(g)
last = find(b, lambda e: e["type"] == "scrape" and e["source"] == D)[-1]
last["scrape"]["gauges"]["sglang:num_decode_prealloc_queue_reqs"] = 3
b.insert(-1, {"t": 4 * S, "type": "wedge", "source": D, "wedge": {"source": D, "gauge": "sglang:num_decode_prealloc_queue_reqs", "value": 3, "since": 2 * S, "at": 3 * S}})
write("bad-slots-released.jsonl", b)

b = copy.deepcopy(g)
find(b, lambda e: e["type"] == "probe")[1]["probe"] = {"ok": False, "latency": 5 * S, "error": "probe 1: no answer within 5s"}
write("bad-liveness.jsonl", b)

b = copy.deepcopy(g)
o = find(b, lambda e: e["type"] == "outcome")[3]["outcome"]
o.update(kind="hung", phase="queued", tokens=0, has_room=False, room=0)
write("bad-client-outcomes.jsonl", b)

b = copy.deepcopy(g)
o = find(b, lambda e: e["type"] == "outcome")[4]["outcome"]
o.update(integrity="answer differs from the model at byte 3 (expected 40 bytes, got 40)")
write("bad-integrity.jsonl", b)

b = copy.deepcopy(g)
find(b, lambda e: e["type"] == "leaks")[0]["leaks"] = {"checked": True, "leaked": 2, "detail": "found unexpected goroutines: [Goroutine 7 ...]"}
write("bad-no-leaks.jsonl", b)

b = copy.deepcopy(g)
find(b, lambda e: e["type"] == "fault")[0]["fault"]["evidence"]["effective"] = False
write("bad-faults-verified.jsonl", b)

b = [e for e in copy.deepcopy(g) if e["type"] != "outcome" or e["outcome"]["turn"] >= 25]
write("bad-load-floor.jsonl", b)

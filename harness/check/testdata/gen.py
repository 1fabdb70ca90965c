#!/usr/bin/env python3
"""Regenerates the recorded event logs the checker tests read.

good.jsonl passes every checker; bad-<check>[-<how>].jsonl breaks exactly
that checker (faults-verified and load-floor are inconclusive by design);
incon-<how>.jsonl makes one checker inconclusive. Logs keep gauges per TP
rank (two ranks), an idle baseline scrape before load, decode's page
accounting and ended rooms with their histories; old-*.jsonl are logs as
the recorder wrote them before that (sums only, no ended rooms)."""
import copy, json

S = 1_000_000_000
P, D = "http://127.0.0.1:30001/metrics", "http://127.0.0.1:30002/metrics"
PE, DE = "http://127.0.0.1:30001", "http://127.0.0.1:30002"
BASE = "2026-11-29T10:00:00Z"
GAUGES = ["sglang:num_prefill_bootstrap_queue_reqs", "sglang:num_prefill_inflight_queue_reqs",
          "sglang:num_decode_prealloc_queue_reqs", "sglang:num_decode_transfer_queue_reqs",
          "sglang:num_running_reqs", "sglang:num_queue_reqs", "pdchaos:decode_pages_awaiting_ack_reqs",
          "sglang:token_usage"]

PAGES = 100  # pages per decode rank
RANKS = ["tp_rank=0", "tp_rank=1"]

def old_scrape(t, src, busy, tokens):
    g = {k: 0.0 for k in GAUGES}
    if busy:
        g["sglang:num_running_reqs"] = busy
    return {"t": t, "type": "scrape", "source": src,
            "scrape": {"gauges": g, "counters": {"sglang:generation_tokens_total": tokens}}}

def scrape(t, src, busy, tokens):
    """One engine's scrape as the recorder writes it now: sums plus ranks."""
    decode = src == D
    ranks = {k: {r: 0.0 for r in RANKS} for k in GAUGES}
    if busy:
        for r in RANKS:
            ranks["sglang:num_running_reqs"][r] = busy
    if decode:
        used = 4 * busy
        for r in RANKS:
            ranks["sglang:token_usage"][r] = used / PAGES
        for k, v in (("pdchaos:decode_pages_used", used), ("pdchaos:decode_pages_free", PAGES - used),
                     ("pdchaos:decode_pages_total", PAGES), ("pdchaos:decode_pages_owned_twice", 0)):
            ranks[k] = {r: float(v) for r in RANKS}
    s = {"t": t, "type": "scrape", "source": src,
         "scrape": {"gauges": {}, "counters": {"sglang:generation_tokens_total": tokens},
                    "ranks": ranks, "engine_type": "decode" if decode else "prefill"}}
    resum(s)
    return s

def resum(s):
    sc = s["scrape"]
    sc["gauges"] = {k: sum(v.values()) for k, v in sc["ranks"].items()}

def wall(ns):
    """The wall time of offset ns from BASE."""
    sec, frac = divmod(ns, S)
    return "2026-11-29T10:%02d:%02d.%09dZ" % (sec // 60, sec % 60, frac)

def ended(r, side, events, last_state):
    ats = [e["at"] for e in events]
    return {"room": r, "side": side, "state": "cleared", "ranks": {}, "cleared": True, "last_state": last_state,
            "events": events, "created": ats[0], "updated": ats[-1]}

def ev(ns, side, kind, state, detail=""):
    e = {"at": wall(ns), "side": side, "rank": 0, "kind": kind, "state": state}
    if detail:
        e["detail"] = detail
    return e

def room_ends(outs, prefill_cancelled=True):
    """Ended records of every outcome's room on both sides. A cancelled
    request records the client's abort on each side 20ms after the cancel
    (prefill only if the router cancels prefill's request), then ends."""
    pre, dec = [], []
    for o in outs:
        if not o.get("has_room"):
            continue
        r, st, end = o["room"], o["start"], o["end"]
        if o["kind"] == "cancelled":
            p = [ev(st + 1000, "prefill", "status", "Bootstrapping")]
            if prefill_cancelled:
                p += [ev(end + 20_000_000, "prefill", "abort-request", "Bootstrapping", "client gone"),
                      ev(end + 30_000_000, "prefill", "clear", "Failed", "local abort")]
            else:
                p += [ev(end + 25_000_000, "prefill", "abort-received", "Bootstrapping", "ABORT from decode"),
                      ev(end + 30_000_000, "prefill", "clear", "Failed", "aborted")]
            d = [ev(st + 1000, "decode", "status", "Bootstrapping"),
                 ev(end + 20_000_000, "decode", "abort-request", "Bootstrapping", "client gone"),
                 ev(end + 22_000_000, "decode", "abort-sent", "Failed"),
                 ev(end + 30_000_000, "decode", "clear", "Failed", "aborted")]
            pre.append(ended(r, "prefill", p, "Failed"))
            dec.append(ended(r, "decode", d, "Failed"))
        else:
            pre.append(ended(r, "prefill", [ev(st + 1000, "prefill", "status", "Bootstrapping"),
                                            ev(st + 2000, "prefill", "clear", "Success", "done")], "Success"))
            dec.append(ended(r, "decode", [ev(st + 1000, "decode", "status", "Bootstrapping"),
                                           ev(st + 3000, "decode", "clear", "Success", "committed")], "Success"))
    return pre, dec

def room(r, state, events=None):
    return {"room": r, "side": "prefill", "state": state, "ranks": {"0": state}, "cleared": False,
            "last_state": "", "events": events or [], "created": "2026-11-29T10:00:01Z",
            "updated": "2026-11-29T10:00:03Z"}

# The resolved engine config a run records (deadlines of 2s, as the fast
# presets set them; durations in ns).
ENGINE = {"model": "pdchaos-fake", "tp": 2, "transfer_workers": 4, "page_size": 16, "chunk_pages": 4, "pages": PAGES,
          "max_new_tokens": 16, "bootstrap_timeout": 2 * S, "inflight_timeout": 2 * S, "waiting_timeout": 2 * S,
          "ack_timeout": 2 * S, "regressions": None, "wire": "nixl", "host": "127.0.0.1", "seed": 42,
          "heartbeat_interval": S, "check_interval": 5_000_000}

def good(old=False):
    sc = old_scrape if old else scrape
    ev = [{"t": 1, "type": "run", "run": {"scenario": "testdata", "seed": 42, "target": "bundled", "base_wall": BASE}}]
    if not old:
        ev[0]["run"]["engine"] = copy.deepcopy(ENGINE)
    if not old:
        ev += [sc(100, P, 0, 0), sc(100, D, 0, 0)]  # the idle baseline, before load
    ev.append({"t": 2, "type": "phase", "phase": "warmup"})
    for i in range(8):
        t = (i + 1) * S // 4
        busy = 3 if i < 6 else 0
        ev += [sc(t, P, busy, i * 10), sc(t, D, busy, i * 100)]
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
    if not old:
        pre, dec = room_ends([e["outcome"] for e in ev if e["type"] == "outcome"])
        ev += [{"t": 3 * S - 1, "type": "rooms", "source": PE, "rooms": {"role": "prefill", "held": [], "cleared": 30, "ended": pre}},
               {"t": 3 * S - 1, "type": "rooms", "source": DE, "rooms": {"role": "decode", "held": [], "cleared": 30, "ended": dec}}]
    ev += [{"t": 3 * S, "type": "phase", "phase": "drain"},
           {"t": 3 * S + 1, "type": "drain", "drain": {"settled": True, "waited": 100}}]
    for i in range(3):
        ev.append({"t": 3 * S + 10 + i, "type": "probe", "probe": {"ok": True, "latency": 5_000_000}})
    ev += [sc(4 * S, P, 0, 100), sc(4 * S, D, 0, 1000),
           {"t": 4 * S + 1, "type": "rooms", "source": PE, "rooms": {"role": "prefill", "held": [], "cleared": 12, "final": True}},
           {"t": 4 * S + 2, "type": "rooms", "source": DE, "rooms": {"role": "decode", "held": [], "cleared": 12, "final": True}},
           {"t": 4 * S + 3, "type": "leaks", "leaks": {"checked": True, "leaked": 0}}]
    if not old:
        # Each role's code probes at the end: failure paths taken, and
        # the branches the fixed engine never takes at zero.
        ev += [{"t": 4 * S + 3, "type": "code-probes", "source": PE, "code_probes": {"role": "prefill", "hits": {
                   "prefill/abort-held-room": 7, "prefill/orphan-status-swept": 0, "prefill/no-transfer-info": 0}}},
               {"t": 4 * S + 3, "type": "code-probes", "source": DE, "code_probes": {"role": "decode", "hits": {
                   "decode/abort": 8, "decode/status-unexpected": 0}}}]
    ev.append({"t": 4 * S + 4, "type": "end", "end": {}})
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

def last_decode(b):
    return find(b, lambda e: e["type"] == "scrape" and e["source"] == D)[-1]

b = copy.deepcopy(g)
last = last_decode(b)
last["scrape"]["ranks"]["sglang:num_decode_prealloc_queue_reqs"]["tp_rank=0"] = 3
resum(last)
b.insert(-1, {"t": 4 * S, "type": "wedge", "source": D, "wedge": {"source": D, "gauge": "sglang:num_decode_prealloc_queue_reqs", "value": 3, "since": 2 * S, "at": 3 * S}})
write("bad-slots-released.jsonl", b)

# Pages released twice on rank 1: its KV usage ends below the baseline.
b = copy.deepcopy(g)
last = last_decode(b)
last["scrape"]["ranks"]["sglang:token_usage"]["tp_rank=1"] = -0.02
resum(last)
write("bad-slots-released-rank-below.jsonl", b)

# One rank above its baseline, the other below: the sums are back to 0.
b = copy.deepcopy(g)
last = last_decode(b)
last["scrape"]["ranks"]["sglang:token_usage"].update({"tp_rank=0": 0.02, "tp_rank=1": -0.02})
last["scrape"]["ranks"]["sglang:num_running_reqs"].update({"tp_rank=0": 1, "tp_rank=1": -1})
resum(last)
write("bad-slots-released-rank-sum-zero.jsonl", b)

# Pages freed twice on rank 1 mid-run: listed free twice, then owned twice,
# and the counts no longer add up to the pool; by the end it looks clean.
b = copy.deepcopy(g)
mid = find(b, lambda e: e["type"] == "scrape" and e["source"] == D)[4]
r = mid["scrape"]["ranks"]
r["pdchaos:decode_pages_owned_twice"]["tp_rank=1"] = 2
r["pdchaos:decode_pages_free"]["tp_rank=1"] += 2
resum(mid)
write("bad-slots-released-pages-owned-twice.jsonl", b)

# A family the check needs is absent on decode: inconclusive, not a pass.
b = copy.deepcopy(g)
last = last_decode(b)
del last["scrape"]["ranks"]["sglang:num_decode_transfer_queue_reqs"]
resum(last)
write("incon-slots-released-missing-family.jsonl", b)

# An exporter that reports a count below zero, steadily: the last scrape
# equals the baseline, yet -1 running requests is no count; inconclusive,
# never a pass.
b = copy.deepcopy(g)
for s in find(b, lambda e: e["type"] == "scrape" and e["source"] == D):
    s["scrape"]["ranks"]["sglang:num_running_reqs"]["tp_rank=0"] = -1
    resum(s)
write("incon-slots-released-negative.jsonl", b)

# A router that stops cancelling prefill's request: decode's ABORT still
# fails prefill's room, but prefill never records the client's abort.
b = copy.deepcopy(g)
pre, _ = room_ends([e["outcome"] for e in b if e["type"] == "outcome"], prefill_cancelled=False)
find(b, lambda e: e["type"] == "rooms" and e["source"] == PE and "ended" in e["rooms"])[0]["rooms"]["ended"] = pre
write("bad-cancels-reached.jsonl", b)

# A cancel that never reaches prefill: its room ends only by the bootstrap
# deadline, 10s later.
b = copy.deepcopy(g)
pre = find(b, lambda e: e["type"] == "rooms" and e["source"] == PE and "ended" in e["rooms"])[0]["rooms"]["ended"]
o = find(b, lambda e: e["type"] == "outcome" and e["outcome"]["kind"] == "cancelled")[0]["outcome"]
rec = [r for r in pre if r["room"] == o["room"]][0]
rec["events"] = [ev(o["start"] + 1000, "prefill", "status", "Bootstrapping"),
                 ev(o["end"] + 10 * S, "prefill", "status", "Failed", "scheduler: bootstrap timeout"),
                 ev(o["end"] + 10 * S + 1000, "prefill", "clear", "Failed", "bootstrap timeout")]
rec["updated"] = rec["events"][-1]["at"]
write("bad-cancels-reached-deadline.jsonl", b)

# Logs as the recorder wrote them before ranks and ended rooms.
og = good(old=True)
write("old-good.jsonl", og)
b = copy.deepcopy(og)
last = last_decode(b)
last["scrape"]["gauges"]["sglang:num_decode_prealloc_queue_reqs"] = 3
write("old-bad-slots-released.jsonl", b)

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
find(b, lambda e: e["type"] == "code-probes" and e["source"] == PE)[0]["code_probes"]["hits"].update(
    {"prefill/orphan-status-swept": 3, "prefill/no-transfer-info": 1})
write("bad-unreachable-branches.jsonl", b)

b = copy.deepcopy(g)
find(b, lambda e: e["type"] == "fault")[0]["fault"]["evidence"]["effective"] = False
write("bad-faults-verified.jsonl", b)

b = [e for e in copy.deepcopy(g) if e["type"] != "outcome" or e["outcome"]["turn"] >= 25]
write("bad-load-floor.jsonl", b)

# timeouts-explained: backstops that fired after the fault window (1s-2s,
# plus the 1s margin), each with the peer's record of the room.
def evr(ns, side, rank, kind, state, detail=""):
    e = ev(ns, side, kind, state, detail)
    e["rank"] = rank
    return e

MS = 1_000_000

def both(ns, side, kind, state, detail=""):
    """One event on both TP ranks."""
    return [evr(ns, side, 0, kind, state, detail), evr(ns, side, 1, kind, state, detail)]

def opened(ns, side):
    if side == "prefill":
        return both(ns, side, "status", "Bootstrapping", "sender: sender created rid=x")
    return (both(ns, side, "status", "Bootstrapping", "receiver: receiver created rid=x") +
            both(ns, side, "status", "WaitingForInput", "receiver: receiver init"))

def waiting_timeout(meta, fire):
    """Decode's record of a room whose waiting deadline fired at fire."""
    return (opened(meta, "decode") + [evr(meta, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank")] +
            both(fire, "decode", "status", "Failed", "receiver: waiting timeout") +
            [evr(fire, "decode", 0, "abort-sent", "Failed", "ABORT to prefill")] +
            both(fire, "decode", "clear", "Failed", "waiting timeout: timed out waiting for kv transfer"))

def with_rooms(base, pre, dec, t=3 * S + S // 2):
    """base with one more ended-rooms snapshot per side."""
    b = copy.deepcopy(base)
    i = [k for k, e in enumerate(b) if e["type"] == "phase" and e["phase"] == "drain"][0]
    b[i:i] = [{"t": t, "type": "rooms", "source": PE, "rooms": {"role": "prefill", "held": [], "cleared": 30, "ended": pre}},
              {"t": t, "type": "rooms", "source": DE, "rooms": {"role": "decode", "held": [], "cleared": 30, "ended": dec}}]
    return b

pre, dec = [], []
# Fault: the room lived through the fault window; prefill's Success notice
# was lost to it.
dec.append(ended(2001, "decode", waiting_timeout(500 * MS, 2500 * MS), "Failed"))
pre.append(ended(2001, "prefill", opened(500 * MS, "prefill") + both(600 * MS, "prefill", "status", "Success", "worker: last chunk 3 done") +
                 both(600 * MS, "prefill", "clear", "Success", "transfer done"), "Success"))
# Load: prefill still transferring when decode gave up.
dec.append(ended(2002, "decode", waiting_timeout(3200 * MS, 5210 * MS), "Failed"))
pre.append(ended(2002, "prefill", opened(3200 * MS, "prefill") + both(3250 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
                 both(5000 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
                 both(5220 * MS, "prefill", "status", "Failed", "bootstrap: decode ABORT") +
                 both(5250 * MS, "prefill", "clear", "Failed", "transfer failed"), "Failed"))
# Race: prefill failed the room 400ms before; its notice was in flight.
dec.append(ended(2003, "decode", waiting_timeout(3300 * MS, 5300 * MS), "Failed"))
pre.append(ended(2003, "prefill", opened(3300 * MS, "prefill") + both(3300 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
                 both(4000 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
                 both(4900 * MS, "prefill", "status", "Failed", "worker: transfer error") +
                 both(4950 * MS, "prefill", "clear", "Failed", "transfer failed"), "Failed"))
# Race on the notice: decode sent its metadata 600ms before prefill's
# bootstrap deadline fired.
pre.append(ended(2004, "prefill", opened(3390 * MS, "prefill") + both(5400 * MS, "prefill", "status", "Failed", "scheduler: bootstrap timeout") +
                 both(5400 * MS, "prefill", "clear", "Failed", "bootstrap failed"), "Failed"))
dec.append(ended(2004, "decode", opened(4800 * MS, "decode") + [evr(4800 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank")] +
                 both(5450 * MS, "decode", "status", "Failed", "receiver: prefill reported failure: bootstrap failed") +
                 both(5450 * MS, "decode", "clear", "Failed", "transfer failed"), "Failed"))
# Load, merged with MIN over ranks: decode rank 0 has every chunk, rank 1
# still waits (MAX would read Success 1.5s before, a lost notice).
pre.append(ended(2005, "prefill", opened(3400 * MS, "prefill") + both(3450 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
                 both(3500 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
                 both(5510 * MS, "prefill", "status", "Failed", "scheduler: inflight timeout") +
                 both(5510 * MS, "prefill", "clear", "Failed", "transfer failed"), "Failed"))
dec.append(ended(2005, "decode", opened(3400 * MS, "decode") + [evr(3440 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank"),
                 evr(4000 * MS, "decode", 0, "status", "Success", "receiver: all chunks and aux received")] +
                 both(5520 * MS, "decode", "status", "Failed", "receiver: prefill reported failure: transfer failed") +
                 both(5520 * MS, "decode", "clear", "Failed", "transfer failed"), "Failed"))
# Load on the ACK: decode aborted, prefill has not read the ABORT yet.
dec.append(ended(2006, "decode", opened(3500 * MS, "decode") + [evr(3500 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank"),
                 evr(3600 * MS, "decode", 0, "abort-request", "WaitingForInput", "client gone rid=x")] +
                 both(3600 * MS, "decode", "status", "Failed", "receiver: aborted") +
                 [evr(3600 * MS, "decode", 0, "abort-sent", "Failed", "ABORT to prefill")] +
                 both(3600 * MS, "decode", "clear", "Failed", "aborted") +
                 [evr(5610 * MS, "decode", 0, "ack-timeout", "cleared", "freeing pages without prefill's ACK")], "Failed"))
pre.append(ended(2006, "prefill", opened(3500 * MS, "prefill") + both(3500 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
                 both(3550 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
                 both(5650 * MS, "prefill", "status", "Failed", "bootstrap: decode ABORT") +
                 both(5660 * MS, "prefill", "clear", "Failed", "transfer failed"), "Failed"))
# KV pool pressure: decode waited 2.4s for pages, so prefill's bootstrap
# deadline fired first (load: decode still held the room); decode's
# metadata went out only after prefill's memory of that failure (four
# bootstrap deadlines, 8s) had lapsed, so decode's waiting deadline is the
# only way out (explained by prefill's deadline before it).
pre.append(ended(2007, "prefill", opened(3300 * MS, "prefill") + both(5300 * MS, "prefill", "status", "Failed", "scheduler: bootstrap timeout") +
                 both(5300 * MS, "prefill", "clear", "Failed", "bootstrap failed"), "Failed"))
dec.append(ended(2007, "decode", both(3300 * MS, "decode", "status", "Bootstrapping", "receiver: receiver created rid=x") +
                 both(13400 * MS, "decode", "status", "WaitingForInput", "receiver: receiver init") +
                 [evr(13400 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank")] +
                 both(15400 * MS, "decode", "status", "Failed", "receiver: waiting timeout") +
                 [evr(15400 * MS, "decode", 0, "abort-sent", "Failed", "ABORT to prefill")] +
                 both(15400 * MS, "decode", "clear", "Failed", "waiting timeout: timed out waiting for kv transfer"), "Failed"))
write("good-timeouts-explained.jsonl", with_rooms(g, pre, dec))

# Prefill's bootstrap deadline fired, then decode's metadata came 0.4s
# later, well within prefill's memory of the failure: prefill must answer
# it Failed at once, so decode's waiting deadline is not explained.
write("bad-timeouts-explained-peer-forgot.jsonl", with_rooms(g,
      [ended(2105, "prefill", opened(3300 * MS, "prefill") + both(5300 * MS, "prefill", "status", "Failed", "scheduler: bootstrap timeout") +
             both(5300 * MS, "prefill", "clear", "Failed", "bootstrap failed"), "Failed")],
      [ended(2105, "decode", both(3300 * MS, "decode", "status", "Bootstrapping", "receiver: receiver created rid=x") +
             both(5700 * MS, "decode", "status", "WaitingForInput", "receiver: receiver init") +
             [evr(5700 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank")] +
             both(7700 * MS, "decode", "status", "Failed", "receiver: waiting timeout") +
             both(7700 * MS, "decode", "clear", "Failed", "waiting timeout: timed out waiting for kv transfer"), "Failed")]))

# A waiting deadline fired and prefill has no record of the room.
write("bad-timeouts-explained-no-peer.jsonl", with_rooms(g, [], [ended(2101, "decode", waiting_timeout(3200 * MS, 5210 * MS), "Failed")]))

# A waiting deadline fired 1.81s after prefill had finished the room: its
# Success notice was lost with no fault to lose it.
write("bad-timeouts-explained-peer-cleared.jsonl", with_rooms(g,
      [ended(2102, "prefill", opened(3200 * MS, "prefill") + both(3250 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
             both(3300 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
             both(3400 * MS, "prefill", "status", "Success", "worker: last chunk 3 done") +
             both(3400 * MS, "prefill", "clear", "Success", "transfer done"), "Success")],
      [ended(2102, "decode", waiting_timeout(3200 * MS, 5210 * MS), "Failed")]))

# Prefill's bootstrap deadline fired though decode sent its metadata 1.9s
# before: the metadata was lost with no fault to lose it.
write("bad-timeouts-explained-notice-lost.jsonl", with_rooms(g,
      [ended(2103, "prefill", opened(3200 * MS, "prefill") + both(5210 * MS, "prefill", "status", "Failed", "scheduler: bootstrap timeout") +
             both(5210 * MS, "prefill", "clear", "Failed", "bootstrap failed"), "Failed")],
      [ended(2103, "decode", opened(3300 * MS, "decode") + [evr(3310 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank")] +
             both(5300 * MS, "decode", "status", "Failed", "receiver: prefill reported failure: bootstrap failed") +
             both(5300 * MS, "decode", "clear", "Failed", "transfer failed"), "Failed")]))

# Prefill failed the room and sent decode its failure notice 1.81s before
# decode's waiting deadline fired; the only fault then was on the KV link,
# which cannot lose a notice: decode ignored it.
b = with_rooms(g,
      [ended(2105, "prefill", opened(3200 * MS, "prefill") + both(3250 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
             both(3300 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
             both(3400 * MS, "prefill", "status", "Failed", "worker: transfer error") +
             [evr(3400 * MS, "prefill", 0, "fail-notice", "Failed", "failure notice to decode")] +
             both(3450 * MS, "prefill", "clear", "Failed", "transfer failed"), "Failed")],
      [ended(2105, "decode", waiting_timeout(3200 * MS, 5210 * MS), "Failed")])
i = [k for k, e in enumerate(b) if e["type"] == "phase" and e["phase"] == "drain"][0]
b.insert(i, {"t": 6 * S, "type": "fault", "fault": {"window": 1, "fault": "reset_peer(kv/0,up,0s)", "layer": "network",
             "planned_start_ns": 3 * S, "planned_end_ns": 6 * S, "applied": True, "start_ns": 3 * S, "end_ns": 6 * S,
             "evidence": {"fault": "reset_peer(kv/0,up,0s)", "effective": True, "counters": {"connections_closed": 2}}}})
write("bad-timeouts-explained-notice-ignored.jsonl", b)

# A room Transferring on prefill for 4.8s, past its 2s inflight deadline
# plus the margin, and no backstop fired: the deadline is not enforced.
write("bad-timeouts-explained-state-bound.jsonl", with_rooms(g,
      [ended(2104, "prefill", opened(3100 * MS, "prefill") + both(3150 * MS, "prefill", "status", "WaitingForInput", "bootstrap: metadata arrived") +
             both(3200 * MS, "prefill", "status", "Transferring", "worker: chunk 0 start") +
             both(8000 * MS, "prefill", "status", "Success", "worker: last chunk 3 done") +
             both(8000 * MS, "prefill", "clear", "Success", "transfer done"), "Success")],
      [ended(2104, "decode", opened(3100 * MS, "decode") + [evr(3150 * MS, "decode", 0, "metadata-sent", "WaitingForInput", "99 pages per rank")] +
             both(4100 * MS, "decode", "status", "Success", "receiver: all chunks and aux received") +
             both(4200 * MS, "decode", "clear", "Success", "generation done"), "Success")]))

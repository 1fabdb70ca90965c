package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// swarmStream keeps swarm draws apart from the run's own stream, so a
// swarm seed's run is the plain run of the config Swarm returns.
const swarmStream = 0x737761726d // "swarm"

// notifyStream draws which message faults move to the notify link, apart
// from swarmStream so the draws made before it came stay as they were.
const notifyStream = 0x6e6f74696679 // "notify"

// bytesStream draws the faults that pace or count a connection's bytes
// (bandwidth, slicer, limit-data), apart from the others for the same
// reason.
const bytesStream = 0x6279746573 // "bytes"

// Swarm returns cfg with a fault mix and client policy drawn from seed, as
// FoundationDB's and TigerBeetle's swarm testing do: each fault kind of a
// palette is switched on with probability 1/3, with drawn parameters and
// timing, and the cancel rates and kills are scaled or switched, so seeds
// explore combinations no preset names; a third of them add a stranger
// (Config.Strangers). The scenario's own faults stay.
// The second result says what was drawn, one line.
func Swarm(cfg Config, seed uint64) (Config, string) {
	r := rand.New(rand.NewPCG(seed, swarmStream))
	run := cfg.Duration
	dr := draws{r, run}
	d, timing := dr.between, dr.timing
	kinds := func(pool ...string) []string {
		var out []string
		for _, k := range pool {
			if r.IntN(2) == 0 {
				out = append(out, k)
			}
		}
		if len(out) == 0 {
			out = []string{pool[r.IntN(len(pool))]}
		}
		return out
	}
	ctl := "control/0"
	palette := []func() Fault{
		func() Fault {
			lo := d(0, 50*time.Millisecond)
			return timing(Fault{Kind: "delay-messages", Link: ctl, Kinds: kinds("registration", "metadata", "abort", "ack", "status"),
				Min: lo, Max: lo + d(10*time.Millisecond, 800*time.Millisecond), KeepOrder: r.IntN(3) == 0}, 300*time.Millisecond, 3*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "hold-messages", Link: ctl, Kinds: kinds("metadata", "abort", "ack", "status"), AfterMessages: 1 + r.IntN(3),
				MaxHold: d(100*time.Millisecond, time.Second)}, 300*time.Millisecond, 3*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "drop-messages", Link: ctl, Kinds: kinds("registration", "metadata", "abort", "ack", "status"), Limit: 1 + r.IntN(5)},
				200*time.Millisecond, 2*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "duplicate-messages", Link: ctl, Kinds: kinds("registration", "metadata", "abort", "ack", "status"), Limit: r.IntN(6)},
				200*time.Millisecond, 2*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "abort-before-metadata", Link: ctl, MaxHold: d(200*time.Millisecond, time.Second)}, time.Second, 4*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "reset-peer", Link: ctl}, 100*time.Millisecond, 800*time.Millisecond)
		},
		func() Fault {
			return timing(Fault{Kind: [2]string{"reset-peer", "link-down"}[r.IntN(2)], Link: "kv/0"}, 50*time.Millisecond, 500*time.Millisecond)
		},
		func() Fault {
			return timing(Fault{Kind: "latency", Link: "kv/0", Stream: "upstream", Delay: d(time.Millisecond, 50*time.Millisecond)}, 300*time.Millisecond, 3*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "pause-transfer-workers", Rank: -1, Worker: r.IntN(2) - 1}, 200*time.Millisecond, 2*time.Second)
		},
		func() Fault {
			return timing(Fault{Kind: "pause-transfer-writes", Rank: -1, Worker: r.IntN(2) - 1}, 200*time.Millisecond, 1500*time.Millisecond)
		},
		func() Fault {
			return timing(Fault{Kind: "stall-bootstrap-loop", Rank: -1, Worker: -1}, 200*time.Millisecond, 1500*time.Millisecond)
		},
		func() Fault {
			role := [2]string{"prefill", "decode"}[r.IntN(2)]
			return timing(Fault{Kind: "stall-scheduler", Role: role, Rank: -1, Worker: -1}, 100*time.Millisecond, time.Second)
		},
		func() Fault {
			f := timing(Fault{Kind: "sigstop", Role: [2]string{"prefill", "decode"}[r.IntN(2)], Rank: -1, Worker: -1}, 500*time.Millisecond, 3*time.Second)
			// Once: repeated, a role frozen three seconds in four keeps
			// a client waiting past its hang timeout, which is the fault
			// working, not a bug found (client-outcomes fails any hang).
			f.Every = 0
			return f
		},
		func() Fault {
			drop, reorder := r.IntN(3), 10+r.IntN(40)
			return timing(Fault{Kind: "kv-chunks", Link: "kv/0", DropPct: drop, ReorderPct: reorder, AfterChunks: 1 + r.IntN(3),
				MaxHold: d(50*time.Millisecond, 500*time.Millisecond), DelayPct: r.IntN(100 - drop - reorder), MaxDelay: d(time.Millisecond, 50*time.Millisecond)},
				300*time.Millisecond, 3*time.Second)
		},
		func() Fault {
			link := [2]string{ctl, "notify/0"}[r.IntN(2)]
			pool := []string{"metadata", "abort", "registration"}
			if link != ctl {
				pool = []string{"status", "ack"}
			}
			return timing(Fault{Kind: "corrupt-messages", Link: link, Kinds: kinds(pool...), Limit: 1 + r.IntN(5),
				Mode: [2]string{"garble", "truncate"}[r.IntN(2)]}, 200*time.Millisecond, 2*time.Second)
		},
		func() Fault {
			// Once, as sigstop: prefill or decode crashes, restarted at
			// once (a blip) or at the window's end.
			f := timing(Fault{Kind: "sigkill", Role: [2]string{"prefill", "decode"}[r.IntN(2)], Restart: r.IntN(2) == 0, Rank: -1, Worker: -1}, 300*time.Millisecond, 2*time.Second)
			f.Every = 0
			return f
		},
	}
	out := cfg
	out.Faults = append([]Fault(nil), cfg.Faults...)
	var drawn []string
	for _, mk := range palette {
		if r.IntN(3) == 0 {
			f := mk()
			out.Faults = append(out.Faults, f)
			drawn = append(drawn, f.Kind)
		}
	}
	// Prefill's statuses and ACKs travel on the notify link, so a message
	// fault on the control link that draws them does nothing to them. Half
	// of the drawn message faults move to the notify link with those kinds
	// (a Failed status or an ACK held or lost is what decode's deadlines
	// and its memory of released rooms are for). Drawn from a stream of
	// their own, so every other draw of a seed stays as it was.
	r2 := rand.New(rand.NewPCG(seed, notifyStream))
	for i := len(cfg.Faults); i < len(out.Faults); i++ {
		f := &out.Faults[i]
		switch f.Kind {
		case "delay-messages", "hold-messages", "drop-messages", "duplicate-messages":
		default:
			continue
		}
		if r2.IntN(2) != 0 {
			continue
		}
		var ks []string
		for _, k := range f.Kinds {
			if k == "status" || k == "ack" {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			ks = []string{[2]string{"status", "ack"}[r2.IntN(2)]}
		}
		f.Link, f.Kinds = "notify/0", ks
		drawn[i-len(cfg.Faults)] += "@notify"
	}
	c := &out.Clients
	scale := func(p float64) float64 { return min(p*2*r.Float64(), 0.45) }
	c.CancelQueuedRate, c.CancelDecodeRate, c.DeadlineRate = scale(c.CancelQueuedRate), scale(c.CancelDecodeRate), scale(c.DeadlineRate)
	if c.DeadlineRate > 0 && c.Deadline == 0 {
		c.Deadline = 2 * time.Second
	}
	if r.IntN(4) == 0 {
		c.KillEvery, c.RestartDelay = d(time.Second, 5*time.Second), d(0, 500*time.Millisecond)
	}
	// Drawn last, so the draws above are what they were before. Most
	// presets set every deadline alike (2s), where code that uses one
	// deadline for another behaves as the right code; half the seeds
	// spread them, each from half its value up to it: never longer, since
	// a scenario's hang timeout and drain deadline are sized for its own
	// (three ACK timeouts of 2.7s hold pages past an 8s hang timeout).
	deadlines := "as the scenario's"
	if r.IntN(2) == 0 {
		e, err := resolvedDeadlines(cfg)
		if err == nil {
			spread := func(v time.Duration) time.Duration { return d(v/2, v) }
			out.Engine.BootstrapTimeout, out.Engine.InflightTimeout = spread(e.BootstrapTimeout), spread(e.InflightTimeout)
			out.Engine.WaitingTimeout, out.Engine.AckTimeout = spread(e.WaitingTimeout), spread(e.AckTimeout)
			deadlines = fmt.Sprintf("bootstrap %v inflight %v waiting %v ack %v", out.Engine.BootstrapTimeout.Round(time.Millisecond),
				out.Engine.InflightTimeout.Round(time.Millisecond), out.Engine.WaitingTimeout.Round(time.Millisecond), out.Engine.AckTimeout.Round(time.Millisecond))
		}
	}
	// After the deadlines, for the same reason: a third of the seeds add
	// a stranger's messages, which no fault of a scenario makes.
	out.Strangers = out.Strangers || r.IntN(3) == 0
	// Last again: a quarter of the seeds of a one-rank scenario run two
	// tensor-parallel ranks on each side, and each drawn fault on a rank-0
	// link moves to rank 1 with even odds, so one rank fails while the
	// other carries on (the paths where decode waits for every rank's
	// word) under every fault mix, not only in the TP presets.
	tp := ""
	if out.Engine.TP <= 1 && r.IntN(4) == 0 {
		out.Engine.TP = 2
		tp = ", tp 2"
		for i := len(cfg.Faults); i < len(out.Faults); i++ {
			f := &out.Faults[i]
			if kind, ok := strings.CutSuffix(f.Link, "/0"); ok && r.IntN(2) == 0 {
				f.Link = kind + "/1"
			}
		}
	}
	// Not drawn: a role the swarm freezes or kills (once) on top of the
	// scenario's own faults stops every request queued behind it for the
	// window, and its peer's ABORTs to it then hold pages for the ACK
	// timeout; a scenario's hang timeout is sized for its own faults only
	// (prefill-restart seed 163: decode stopped 2.7 s inside prefill's 3 s
	// kill kept a queued request 8 s). Each such window lengthens the
	// clients' patience by its longest draw and one ACK timeout, so a hang
	// still reported is one no fault explains.
	hang := ""
	if was := c.HangTimeout; was > 0 {
		ack := out.Engine.AckTimeout
		if e, err := resolvedDeadlines(out); err == nil {
			ack = e.AckTimeout
		}
		for _, f := range out.Faults[len(cfg.Faults):] {
			if f.Kind == "sigstop" || f.Kind == "sigkill" {
				c.HangTimeout += f.ForMax + ack
			}
		}
		if c.HangTimeout != was {
			hang = fmt.Sprintf(", hang timeout %v", c.HangTimeout.Round(time.Millisecond))
		}
	}
	// Last, and only where the scenario retries (so every other
	// scenario's seeds draw what they did): half the seeds back off
	// before a retry, up to the waiting plus the ACK timeout, so copies
	// of a room also arrive between and after those deadlines, where
	// decode's memory of a released room and its ACK-held pages end.
	retry := ""
	if (c.RetrySameRidRate > 0 || c.RetrySameRoomRate > 0) && c.RetryDelay == 0 && r.IntN(2) == 0 {
		if e, err := resolvedDeadlines(out); err == nil {
			c.RetryDelay = d(0, e.WaitingTimeout+e.AckTimeout)
			retry = fmt.Sprintf(", retry delay up to %v", c.RetryDelay.Round(time.Millisecond))
		}
	}
	// Last of all, from a stream of their own: the faults that pace or
	// count a connection's bytes, each on with probability 1/3 on a link
	// drawn among those that carry it (a KV write cut mid-frame, a
	// registration or a notice cut with its connection, transfers slowed
	// to a crawl), moved to rank 1 with the others at TP 2.
	r3 := rand.New(rand.NewPCG(seed, bytesStream))
	timing3 := draws{r3, run}.timing
	for _, mk := range []func() Fault{
		func() Fault {
			return timing3(Fault{Kind: "bandwidth", Link: "kv/0", Stream: "upstream", RateKB: 64 << r3.IntN(6)}, 300*time.Millisecond, 3*time.Second)
		},
		func() Fault {
			return timing3(Fault{Kind: "slicer", Link: [2]string{"kv/0", ctl}[r3.IntN(2)], Stream: "upstream", AverageSize: 16 << r3.IntN(5),
				Delay: time.Duration(r3.IntN(200)) * time.Microsecond}, 300*time.Millisecond, 3*time.Second)
		},
		func() Fault {
			return timing3(Fault{Kind: "limit-data", Link: [3]string{"kv/0", ctl, "notify/0"}[r3.IntN(3)], Stream: "upstream", Bytes: 2000 + r3.IntN(48000)},
				200*time.Millisecond, 2*time.Second)
		},
	} {
		if r3.IntN(3) != 0 {
			continue
		}
		f := mk()
		if out.Engine.TP == 2 && r3.IntN(2) == 0 {
			if kind, ok := strings.CutSuffix(f.Link, "/0"); ok {
				f.Link = kind + "/1"
			}
		}
		out.Faults = append(out.Faults, f)
		drawn = append(drawn, f.Kind+"@"+f.Link)
	}
	return out, fmt.Sprintf("swarm seed %d: faults [%s], cancel rates queued %.2f decode %.2f deadline %.2f, kill every %v, deadlines %s, strangers %v%s%s%s",
		seed, strings.Join(drawn, " "), c.CancelQueuedRate, c.CancelDecodeRate, c.DeadlineRate, c.KillEvery, deadlines, out.Strangers, tp, hang, retry)
}

// draws are a swarm seed's draws from one stream, over a run of length run.
type draws struct {
	r   *rand.Rand
	run time.Duration
}

// between draws a duration in [lo, hi].
func (w draws) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(w.r.Int64N(int64(hi-lo)+1))
}

// timing draws a fault's windows: a first start in the run's first half,
// each window [lo, hi] long, and half the time a repeat.
func (w draws) timing(f Fault, lo, hi time.Duration) Fault {
	f.AtMin = w.between(0, w.run/2)
	f.ForMin, f.ForMax = lo, hi
	if w.r.IntN(2) == 0 {
		f.Every = hi + w.between(time.Second, 3*time.Second)
	}
	return f
}

// resolvedDeadlines is cfg's engine config with its defaults filled in.
func resolvedDeadlines(cfg Config) (contract.EngineConfig, error) {
	e, _, err := cfg.Engine.Resolve()
	return e, err
}

package core

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// This file is a scripted driver: it owns one Prefill and one Decode and
// moves every message between them by hand, so a test chooses the exact
// interleaving of scheduler steps, bootstrap-loop messages, transfer-worker
// phases and notices. Time only moves through advance.

const (
	testBootstrap = "10.0.0.1:8998" // prefill bootstrap address decode pairs rooms with
	testWorkers   = 4
	testTimeout   = 10 * time.Second // bootstrap, inflight and waiting timeouts
	testAckWait   = 5 * time.Second
	maxRounds     = 400
)

var errRefused = errors.New("decode refused chunk")

type worker struct{ rank, w int }

// rig is the driver.
type rig struct {
	t      *testing.T
	now    time.Time
	ph, dh *History
	p      *Prefill
	d      *Decode

	ctl     []DecodeOut // decode → prefill control messages not yet delivered
	notices []Outbound  // prefill → decode notices not yet delivered
	busy    map[worker]*Chunk

	rids    map[string]string // rid → prompt, for every request added on either side
	onP     map[string]bool   // rids added on prefill
	onD     map[string]bool   // rids added on decode
	maxNew  map[string]int
	answer  map[string]*strings.Builder
	done    map[string]int     // decode Done tokens per rid
	pfin    map[string][]error // prefill finishes per rid (nil = success)
	dfin    map[string][]error // decode finishes per rid
	ctlErrs []error            // errors returned by Prefill.OnControl
	hangs   int                // Decode.Step calls that returned ErrCollectiveHang
	router  ProbeCounts        // what scripted core.Legs count
}

type rigOpts struct {
	reg         contract.Regressions
	ranks       int // both sides
	decodePages int
	wire        contract.Wire // both sides; empty is NIXL
	posted      int           // prefill PostedWrites; 0 is 1
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	if o.ranks == 0 {
		o.ranks = 1
	}
	if o.decodePages == 0 {
		o.decodePages = 256
	}
	r := &rig{t: t, now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), ph: NewHistory(0), dh: NewHistory(0),
		busy: map[worker]*Chunk{}, rids: map[string]string{}, onP: map[string]bool{}, onD: map[string]bool{}, maxNew: map[string]int{}, answer: map[string]*strings.Builder{},
		done: map[string]int{}, pfin: map[string][]error{}, dfin: map[string][]error{}}
	r.p = NewPrefill(PrefillConfig{Ranks: o.ranks, Workers: testWorkers, PageSize: 16, ChunkPages: 2,
		BootstrapTimeout: testTimeout, InflightTimeout: testTimeout, Regressions: o.reg, Wire: o.wire, PostedWrites: o.posted}, r.ph)
	wire := dialectOf(o.wire)
	var agents []DecodeAgent
	for i := range o.ranks {
		kv := fmt.Sprintf("10.0.0.2:%d", 9200+i)
		agents = append(agents, DecodeAgent{IP: "10.0.0.2", NotifyPort: 9100 + i, Name: wire.AgentName(fmt.Sprintf("decode-agent-%d", i), kv), KVAddr: kv})
	}
	r.d = NewDecode(DecodeConfig{Ranks: o.ranks, PageSize: 16, Pages: o.decodePages, WaitingTimeout: testTimeout,
		AckTimeout: testAckWait, Agents: agents, Regressions: o.reg, Wire: o.wire}, r.dh)
	// Registration is the runtime's job, once per connection: deliver it first.
	for i := range agents {
		if err := r.p.OnControl(r.now, i, r.d.Registration(i, testBootstrap)); err != nil {
			t.Fatalf("registration rank %d: %v", i, err)
		}
	}
	return r
}

func (r *rig) advance(d time.Duration) { r.now = r.now.Add(d) }

// collect moves both sides' outbound messages into the rig's link queues.
func (r *rig) collect() {
	r.ctl = append(r.ctl, r.d.TakeOutbound()...)
	r.notices = append(r.notices, r.p.TakeOutbound()...)
}

func (r *rig) note(rid, prompt string, maxNew int) {
	r.rids[rid] = prompt
	if maxNew > 0 {
		r.maxNew[rid] = maxNew
	}
}

func (r *rig) addD(rid string, room uint64, prompt string, maxNew int) {
	r.t.Helper()
	r.note(rid, prompt, maxNew)
	r.onD[rid] = true
	if err := r.d.Add(r.now, rid, room, testBootstrap, model.Tokenize(prompt), maxNew); err != nil {
		r.t.Fatalf("decode add %s: %v", rid, err)
	}
	r.collect()
}

func (r *rig) addP(rid string, room uint64, prompt string) {
	r.t.Helper()
	r.note(rid, prompt, 0)
	r.onP[rid] = true
	if err := r.p.Add(r.now, rid, room, model.Tokenize(prompt)); err != nil {
		r.t.Fatalf("prefill add %s: %v", rid, err)
	}
	r.collect()
}

// add is the router: the same request to decode and prefill at once.
func (r *rig) add(rid string, room uint64, prompt string, maxNew int) {
	r.t.Helper()
	r.addD(rid, room, prompt, maxNew)
	r.addP(rid, room, prompt)
}

// transfer adds a request on both sides and runs it until prefill's
// workers have written every chunk (decode not yet stepped past it), with
// whatever that sent collected.
func (r *rig) transfer(rid string, room uint64, prompt string, maxNew int) {
	r.t.Helper()
	r.add(rid, room, prompt, maxNew)
	r.stepD()
	r.deliverControl()
	r.stepP()
	r.runWorkers()
	r.collect()
}

func (r *rig) abortD(rid string) { r.d.Abort(r.now, rid); r.collect() }
func (r *rig) abortP(rid string) { r.p.Abort(r.now, rid); r.collect() }

// deliverControl hands every pending decode→prefill message to the
// prefill rank's bootstrap loop, in order.
func (r *rig) deliverControl() int {
	r.collect()
	n := len(r.ctl)
	for _, o := range r.ctl {
		if o.Bootstrap != testBootstrap {
			r.t.Errorf("control message for bootstrap %q", o.Bootstrap)
		}
		if err := r.p.OnControl(r.now, o.Rank, o.Frames); err != nil {
			r.ctlErrs = append(r.ctlErrs, err)
		}
	}
	r.ctl = nil
	r.collect()
	return n
}

// deliverNotices hands every pending prefill→decode notice to decode.
func (r *rig) deliverNotices() int {
	r.collect()
	n := len(r.notices)
	for _, o := range r.notices {
		if err := r.d.OnNotice(r.now, o.Rank, o.Frames); err != nil {
			r.t.Errorf("notice %q: %v", o.Frames, err)
		}
	}
	r.notices = nil
	return n
}

func (r *rig) stepP() {
	res := r.p.Step(r.now)
	for _, f := range res.Finished {
		r.pfin[f.Rid] = append(r.pfin[f.Rid], f.Err)
	}
	r.collect()
}

func (r *rig) stepD() {
	res, err := r.d.Step(r.now)
	if errors.Is(err, ErrCollectiveHang) {
		r.hangs++
	} else if err != nil {
		r.t.Fatalf("decode step: %v", err)
	}
	for _, tok := range res.Tokens {
		b := r.answer[tok.Rid]
		if b == nil {
			b = &strings.Builder{}
			r.answer[tok.Rid] = b
		}
		b.WriteString(tok.Piece)
		if tok.Done {
			r.done[tok.Rid]++
		}
	}
	for _, f := range res.Finished {
		r.dfin[f.Rid] = append(r.dfin[f.Rid], f.Err)
	}
	r.collect()
}

// begin is a worker's dequeue: it holds the chunk until end.
func (r *rig) begin(rank, w int) *Chunk {
	r.t.Helper()
	if r.busy[worker{rank, w}] != nil {
		r.t.Fatalf("worker %d/%d already holds a chunk", rank, w)
	}
	c := r.p.WorkerBegin(r.now, rank, w)
	if c != nil {
		r.busy[worker{rank, w}] = c
	}
	r.collect()
	return c
}

// send is the worker passing its pause gate; true means the write starts.
func (r *rig) send(rank, w int) bool {
	ok := r.p.WorkerSend(r.now, rank, w)
	if !ok {
		delete(r.busy, worker{rank, w}) // WorkerSend released the chunk
	}
	r.collect()
	return ok
}

// land is the chunk's bytes arriving on decode (if its agent name is one
// decode admits), then (for a rank's last
// chunk that decode accepted) the aux completion.
func (r *rig) land(c *Chunk) bool {
	if !r.d.AdmitKV(r.now, c.Rank, c.Room, c.ID, c.Agent) {
		return false
	}
	ok := r.d.OnChunk(r.now, c.Rank, c.Room, c.ID, c.Last, c.Pages, c.First, c.Payload)
	if ok && c.Last {
		r.d.OnAux(r.now, c.Rank, c.Room)
	}
	return ok
}

// end finishes the held chunk with err (nil: written and accepted).
func (r *rig) end(rank, w int, err error) {
	r.p.WorkerEnd(r.now, rank, w, err)
	delete(r.busy, worker{rank, w})
	r.collect()
}

// transferOne runs one chunk through worker (rank, w) start to finish.
func (r *rig) transferOne(rank, w int) bool {
	c := r.begin(rank, w)
	if c == nil {
		return false
	}
	if r.send(rank, w) {
		var err error
		if !r.land(c) {
			err = errRefused
		}
		r.end(rank, w, err)
	}
	return true
}

// runWorkers drains every idle worker's queue.
func (r *rig) runWorkers() int {
	n := 0
	for rank := range r.p.Ranks() {
		for w := range r.p.Workers() {
			if r.busy[worker{rank, w}] != nil {
				continue
			}
			for r.transferOne(rank, w) {
				n++
			}
		}
	}
	return n
}

// step is one round of every actor, in a fixed order.
func (r *rig) step() {
	r.deliverControl()
	r.stepP()
	r.runWorkers()
	r.deliverNotices()
	r.stepD()
	r.deliverNotices()
}

func (r *rig) idle() bool {
	b, w, i := r.p.QueueLens()
	if b+w+i > 0 || len(r.ctl) > 0 || len(r.notices) > 0 {
		return false
	}
	for rank := range r.p.Ranks() {
		for wk := range r.p.Workers() {
			if r.p.Pending(rank, wk) {
				return false
			}
		}
	}
	for rank := range r.d.Ranks() {
		l := r.d.Lens(rank)
		if l.Prealloc+l.Transfer+l.Running+l.AwaitingAck > 0 {
			return false
		}
	}
	return true
}

// settle steps until nothing is left to do (or maxRounds, for wedges).
// Time does not move.
func (r *rig) settle() {
	for range maxRounds {
		r.step()
		if r.idle() {
			r.step() // one more, so late notices are seen
			return
		}
	}
}

// prompt returns n deterministic words, different per seed.
func prompt(seed, n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", (seed*7919+i*104729)%5003)
	}
	return strings.Join(words, " ")
}

func workerOf(room uint64) int { return int(room % testWorkers) }

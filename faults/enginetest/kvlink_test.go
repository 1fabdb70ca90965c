package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/faults/kvlink"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// Chunks held, delayed and overtaken on the KV link: every answer is still
// exactly the model's (decode counts a room's chunks by id, whatever order
// they land in), and the evidence shows chunks that were truly overtaken.
// With one write outstanding per worker connection they are overtaken by
// other rooms only; with kv_posted_writes 4, by chunks of their own room
// too, and the room's completion still waits for every write.
func TestKVChunksReorderKeepsAnswersExact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		posted int
	}{{"one write per connection", 1}, {"four posted writes", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.NoLeaks(t)
			c := testcluster.Start(t, contract.EngineConfig{TransferWorkers: 4, KVPostedWrites: tc.posted})
			f := &kvlink.Chunks{Link: contract.KVLink(0), Rand: rand.New(rand.NewPCG(9, 9)),
				Rules: kvlink.Rules{ReorderPct: 40, AfterChunks: 1, MaxHold: 200 * time.Millisecond,
					DelayPct: 30, MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}}
			heal := inject(t, c, f)
			enough := func() bool {
				s := f.Stats()
				return s.Reordered > 0 && (tc.posted == 1 || s.ReorderedInRoom > 0)
			}
			// Rounds of concurrent requests until chunks were overtaken:
			// the rooms must be on different workers at once, which is
			// likely in one round and all but certain in a few.
			for round := 0; round < 5 && !enough(); round++ {
				var results []<-chan error
				for i := range 8 {
					ch, _ := testkit.Async(t, func(ctx context.Context) error {
						ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
						defer cancel()
						return testkit.ChatExact(ctx, c.Endpoint(), prompt(fmt.Sprintf("reorder-%d-%d", round, i)), 8)
					})
					results = append(results, ch)
				}
				for i, ch := range results {
					if err := testkit.Recv(t, ch, 40*time.Second); err != nil {
						t.Fatalf("round %d request %d under reordered chunks: %v", round, i, err)
					}
				}
			}
			mustHeal(t, f, heal)
			ev := effective(t, f, true)
			s := f.Stats()
			if !enough() || s.Delayed == 0 || s.Dropped != 0 || s.Malformed != 0 {
				t.Fatalf("stats %+v: want chunks overtaken (in their room with posted writes) and delayed, none dropped or malformed", s)
			}
			if tc.posted == 1 && s.ReorderedInRoom != 0 {
				t.Fatalf("stats %+v: a room's chunks overtook each other with one write outstanding per connection", s)
			}
			t.Logf("evidence: %v", ev.Counters)
			healthyAfter(t, c, 10*time.Second)
		})
	}
}

// Chunks dropped: the write completions fail, prefill fails the room and
// tells decode, and the request ends with an error, never a hang or a
// wrong answer; the engine drains with the fault still on. With posted
// writes, the batch's other writes may have landed: the room still fails
// whole.
func TestKVChunksDropFailsRoomCleanly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		posted int
		pct    int
	}{{"every chunk", 1, 100}, {"three in five, four posted writes", 4, 60}} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.NoLeaks(t)
			c := testcluster.Start(t, shortDeadlines(contract.EngineConfig{KVPostedWrites: tc.posted}))
			f := &kvlink.Chunks{Link: contract.KVLink(0), Rand: rand.New(rand.NewPCG(3, 4)), Rules: kvlink.Rules{DropPct: tc.pct}}
			heal := inject(t, c, f)
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			for i := range 2 {
				err := testkit.ChatExact(ctx, c.Endpoint(), prompt(fmt.Sprintf("drop-%d", i)), 8)
				switch {
				case ctx.Err() != nil:
					t.Fatalf("request %d hung with its chunks dropped: %v", i, err)
				case err == nil:
					t.Fatalf("request %d completed although its KV chunks were dropped", i)
				case strings.Contains(err.Error(), "answer"):
					t.Fatalf("request %d: wrong answer with dropped chunks: %v", i, err)
				}
				t.Logf("request %d with its chunks dropped: %v", i, err)
			}
			testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
			mustHeal(t, f, heal)
			effective(t, f, true)
			if s := f.Stats(); s.Dropped == 0 {
				t.Fatalf("stats %+v: nothing dropped", s)
			}
			healthyAfter(t, c, 10*time.Second)
		})
	}
}

// A fault on a link that is not a KV link is refused before anything is
// applied.
func TestKVChunksRefusesNonKVLink(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	f := &kvlink.Chunks{Link: contract.ControlLink(0), Rand: rand.New(rand.NewPCG(1, 1)), Rules: kvlink.Rules{DropPct: 1}}
	if _, err := f.Inject(t.Context(), c); !errors.Is(err, contract.ErrUnsupported) || !strings.Contains(err.Error(), "not kv") {
		t.Fatalf("inject on a control link: %v, want unsupported naming the link kind", err)
	}
	if err := f.Preflight(c); err == nil {
		t.Fatal("preflight accepted a control link")
	}
}

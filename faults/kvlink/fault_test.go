package kvlink

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// target offers one KV link to addr and records Interpose.
type target struct {
	addr     string
	fail     error
	mu       sync.Mutex
	via      string
	restored int
}

func (f *target) Links() []contract.Link {
	return []contract.Link{{Name: "kv/0", From: "prefill", To: "decode", Kind: contract.LinkKV, Addr: f.addr},
		{Name: "control/0", From: "decode", To: "prefill", Kind: contract.LinkZMTP, Addr: f.addr}}
}

func (f *target) Interpose(_ context.Context, _, via string) (contract.Restore, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	f.mu.Lock()
	f.via = via
	f.mu.Unlock()
	return func(context.Context) error {
		f.mu.Lock()
		f.restored++
		f.mu.Unlock()
		return nil
	}, nil
}

func (f *target) Hooks() (contract.Hooks, error)         { return nil, contract.ErrUnsupported }
func (f *target) Processes() (contract.Processes, error) { return nil, contract.ErrUnsupported }

func (f *target) viaAddr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.via
}

func chunks(rules Rules) *Chunks {
	return &Chunks{Link: "kv/0", Rules: rules, Rand: rand.New(rand.NewPCG(5, 6))}
}

// An Interpose that fails leaves no relay behind (TestMain checks for
// goroutines) and no heal to call.
func TestInjectFailureLeavesNothing(t *testing.T) {
	s := newSink(t)
	f := chunks(Rules{DropPct: 5})
	heal, err := f.Inject(testkit.Context(t), &target{addr: s.ln.Addr().String(), fail: errors.New("no route")})
	if err == nil || heal != nil || !strings.Contains(err.Error(), "no route") {
		t.Fatalf("inject with a failing interpose: heal %v, err %v", heal != nil, err)
	}
	heal, err = f.Inject(testkit.Context(t), &target{addr: s.ln.Addr().String()})
	if err != nil {
		t.Fatalf("a good inject after a failed one: %v", err)
	}
	if err := heal(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Heal with a context that has already ended still releases the held
// chunk, restores the link and stops every goroutine; it is safe twice.
func TestHealWithDeadContextCleansUp(t *testing.T) {
	s := newSink(t)
	tg := &target{addr: s.ln.Addr().String()}
	f := chunks(Rules{ReorderPct: 100, MaxHold: time.Hour})
	heal, err := f.Inject(testkit.Context(t), tg)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, tg.viaAddr())
	done := send(t, c, frame(contract.KVKindChunk, 1, 0, false, []byte("held")))
	testkit.Eventually(t, 5*time.Second, func() error {
		if f.Stats().Held == 0 {
			return errors.New("chunk not held yet")
		}
		return nil
	})
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	_ = heal(dead) // may report the dead ctx; must still clean up
	if err := testkit.Recv(t, done, 5*time.Second); err != nil {
		t.Fatalf("the held chunk after heal: %v", err)
	}
	if tg.restored != 1 {
		t.Fatalf("link restored %d times, want 1", tg.restored)
	}
	_ = heal(context.Background())
	if tg.restored != 1 {
		t.Fatal("a second heal restored the link again")
	}
	if st := f.Stats(); st.Released != 1 || st.Reordered != 0 {
		t.Fatalf("stats %+v: want the hold released by heal, not counted as a reorder", st)
	}
	if ev := f.Evidence(); ev.Effective {
		t.Fatalf("evidence %+v: effective with nothing overtaken, delayed or dropped", ev)
	}
}

func TestChunksRefusesBadFields(t *testing.T) {
	t.Parallel()
	tg := &target{addr: "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		f    *Chunks
		want string
	}{
		{"no link", &Chunks{Rules: Rules{DropPct: 1}, Rand: rand.New(rand.NewPCG(1, 1))}, "Link"},
		{"no rand", &Chunks{Link: "kv/0", Rules: Rules{DropPct: 1}}, "Rand"},
		{"does nothing", chunks(Rules{}), "do nothing"},
		{"over 100", chunks(Rules{DropPct: 70, ReorderPct: 70}), "over 100"},
		{"not a kv link", &Chunks{Link: "control/0", Rules: Rules{DropPct: 1}, Rand: rand.New(rand.NewPCG(1, 1))}, "not kv"},
		{"no such link", &Chunks{Link: "kv/9", Rules: Rules{DropPct: 1}, Rand: rand.New(rand.NewPCG(1, 1))}, `no link "kv/9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			heal, err := tc.f.Inject(context.Background(), tg)
			if err == nil || heal != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Inject: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

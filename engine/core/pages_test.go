package core

import (
	"testing"

	"github.com/pdchaos/pdchaos/engine/model"
)

// TestPageAccountingFreedTwice: a pool used soundly adds up and owns no
// page twice; pages freed twice are listed free twice (the counts exceed
// the pool) and, once handed out again, owned by two rooms at once.
func TestPageAccountingFreedTwice(t *testing.T) {
	t.Parallel()
	p := NewPagePool(8, 16)
	a, _ := p.Alloc(3, 1)
	if got := p.Accounting(); got != (PageAccounting{Used: 3, Free: 5, Total: 8}) {
		t.Fatalf("sound pool: %+v", got)
	}
	p.Free(a)
	if got := p.Accounting(); got != (PageAccounting{Used: 0, Free: 8, Total: 8}) {
		t.Fatalf("after one free: %+v", got)
	}
	p.Free(a[:1]) // freed twice
	got := p.Accounting()
	if got.OwnedTwice != 1 || got.Used+got.Free == got.Total {
		t.Fatalf("freed twice: %+v, want 1 owned twice and counts off the pool", got)
	}
	if u := float64(p.Used()) / float64(p.Total()); u >= 0 {
		t.Fatalf("token usage %g: a double free drives it below 0", u)
	}
	// The free list hands the same page to two rooms.
	b, _ := p.Alloc(1, 2)
	c, _ := p.Alloc(1, 3)
	if b[0] != c[0] {
		t.Fatalf("pages %v and %v: LIFO reuse should hand the twice-freed page out twice", b, c)
	}
	if got := p.Accounting(); got.OwnedTwice == 0 {
		t.Fatalf("a page owned by two rooms: %+v", got)
	}
}

// A page's bytes digest as Read returns them (zeros never written), and
// every write, even of the same bytes, raises the pages' write sum that
// readSeed reuses its last digest by.
func TestPageDigestAndWrites(t *testing.T) {
	t.Parallel()
	p := NewPagePool(4, 16)
	pages := []uint32{1, 2}
	if n := p.writesTo(pages); n != 0 {
		t.Fatalf("fresh pages: %d writes", n)
	}
	if p.digest(model.NewDigest(), 1, 0, 16) != model.NewDigest().Write(p.Read(1, 0, 16)) {
		t.Fatal("an unwritten page does not digest as zeros")
	}
	b := []byte("abcdefgh")
	_ = p.Write(2, 8, b)
	before := p.writesTo(pages)
	_ = p.Write(2, 8, b)
	if after := p.writesTo(pages); before != 1 || after != 2 {
		t.Fatalf("write sums %d then %d, want 1 then 2", before, after)
	}
	if p.Write(9, 0, b) == nil || p.writesTo([]uint32{9}) != 0 {
		t.Fatal("an out-of-range write is refused and counts nowhere")
	}
	if p.digest(model.NewDigest(), 2, 4, 12) != model.NewDigest().Write(p.Read(2, 4, 12)) {
		t.Fatal("a written page digests differently from what Read returns")
	}
}

// A running request's re-reads of its pages reuse the last digest only
// while nothing writes them: bytes written under it mid-answer still
// change the rest of the answer, as a late write does on a GPU.
func TestWriteUnderRunningRequestChangesAnswer(t *testing.T) {
	t.Parallel()
	for _, write := range []bool{false, true} {
		r := newRig(t, rigOpts{ranks: 2})
		p := prompt(3, 70)
		r.add("a", 11, p, 40)
		for range maxRounds {
			if req := r.d.byRid["a"]; req == nil || req.generated >= 2*attendEvery+1 {
				break
			}
			r.step()
		}
		req := r.d.byRid["a"]
		if req == nil || !req.committed {
			t.Fatal("request a never reached decoding")
		}
		if write {
			_ = r.d.ranks[1].pool.Write(req.pages[1][2], 0, []byte{1, 2, 3})
		}
		r.settle()
		got, want := r.answer["a"].String(), model.Expected(p, 40)
		if (got != want) != write {
			t.Fatalf("write under the running request %v: answer right %v", write, got == want)
		}
	}
}

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
	if got := p.appendRead([]byte{7}, 1, 0, 16); string(got) != string(append([]byte{7}, p.Read(1, 0, 16)...)) {
		t.Fatalf("an unwritten page reads %v, not zeros", got)
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
	if got := p.appendRead(nil, 2, 4, 12); string(got) != string(p.Read(2, 4, 12)) {
		t.Fatalf("a written page appends %v, Read returns %v", got, p.Read(2, 4, 12))
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

// readSeed's resumed digests are model.Seed of each stream, whether it
// shares all, part, a block boundary's worth or nothing of the last one's
// bytes, and whether it is longer or shorter.
func TestKVDigestsResume(t *testing.T) {
	t.Parallel()
	base := make([]byte, 5*kvBlock+300)
	for i := range base {
		base[i] = byte(i*7 + i/13)
	}
	var k kvDigests
	for i, n := range []int{len(base), len(base), 3 * kvBlock, len(base), kvBlock - 1, 0, 4*kvBlock + 5, len(base)} {
		kv := append([]byte(nil), base[:n]...)
		if i%3 == 1 && n > kvBlock+10 {
			kv[kvBlock+10] ^= 1 // differs inside the second block
		}
		if i == 6 {
			kv[len(kv)-1] ^= 1 // differs in the tail only
		}
		if got, want := k.seed(append(k.next[:0], kv...)), model.Seed(kv); got != want {
			t.Fatalf("stream %d (%d bytes): seed %x, model.Seed %x", i, n, got, want)
		}
	}
}

// Accounting's shortcut (no page by page count while every Free was of a
// page held once) agrees with the count after every step of random
// allocations and frees, sound ones first, then double frees and frees of
// pages never handed out.
func TestPageAccountingShortcut(t *testing.T) {
	t.Parallel()
	x := uint64(88172645463325252) // xorshift: the core's tests draw no randomness either
	intn := func(n int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(n))
	}
	for _, oddAfter := range []int{-1, 50, 200} {
		p := NewPagePool(64, 16)
		var held [][]uint32
		for step := range 400 {
			switch k := intn(10); {
			case oddAfter >= 0 && step >= oddAfter && k == 0 && len(held) > 0:
				p.Free(held[intn(len(held))]) // freed twice (or more)
			case oddAfter >= 0 && step >= oddAfter && k == 1:
				p.Free([]uint32{uint32(intn(64))}) // maybe never handed out
			case k < 6 || len(held) == 0:
				if pg, ok := p.Alloc(1+intn(6), uint64(step+1)); ok {
					held = append(held, pg)
				}
			default:
				i := intn(len(held))
				p.Free(held[i])
				held = append(held[:i], held[i+1:]...)
			}
			full := p.count(PageAccounting{Free: len(p.free), Total: len(p.data)})
			if got := p.Accounting(); got != full {
				t.Fatalf("odd after %d, step %d: Accounting %+v, counted %+v", oddAfter, step, got, full)
			}
		}
		if oddAfter < 0 && p.odd {
			t.Fatal("sound frees marked the pool odd")
		}
	}
}

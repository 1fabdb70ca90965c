package core

import "testing"

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

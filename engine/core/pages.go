package core

import "fmt"

// PagePool is one decode rank's KV memory: fixed-size pages, a LIFO free
// list (so a freed page is the next one reused, which is what turns an early
// free into visible corruption), and the bytes themselves.
type PagePool struct {
	pageBytes int
	data      [][]byte
	free      []uint32
	owner     []uint64 // room holding each page; 0 when free
	refs      []int    // allocations holding each page: more than 1 is a page owned twice
	writes    []uint64 // writes each page took: a reader's unchanged sum means unchanged bytes
	listed    []int32  // Accounting's scratch: times each page is on the free list
	// odd is set once Free took a page no allocation held, or one two
	// held: until then every page is either listed free once and held by
	// none, or held by one and not listed, and Accounting needs no count.
	odd bool
}

// PageAccounting is a pool's bookkeeping as the metrics export it. A sound
// pool has OwnedTwice 0 and Used+Free == Total; a page freed twice shows
// in both (listed free twice, then handed to two rooms).
type PageAccounting struct {
	// Used counts pages some allocation holds; Free the free list's length.
	Used, Free, Total int
	// OwnedTwice counts pages held by two allocations, listed free more
	// than once, or listed free while held.
	OwnedTwice int
}

// NewPagePool returns n pages of pageBytes each, all free.
func NewPagePool(n, pageBytes int) *PagePool {
	p := &PagePool{pageBytes: pageBytes, data: make([][]byte, n), owner: make([]uint64, n), refs: make([]int, n), writes: make([]uint64, n)}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, uint32(i))
	}
	return p
}

// Alloc takes n pages for room, or none if fewer are free.
func (p *PagePool) Alloc(n int, room uint64) ([]uint32, bool) {
	if n > len(p.free) {
		return nil, false
	}
	out := make([]uint32, n)
	for i := range n {
		out[i] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.owner[out[i]] = room
		p.refs[out[i]]++
	}
	return out, true
}

// Free returns pages to the pool. Like a real allocator it trusts the
// caller: a page freed twice goes on the free list twice, which Accounting
// reports.
func (p *PagePool) Free(pages []uint32) {
	for i := len(pages) - 1; i >= 0; i-- {
		if p.refs[pages[i]] != 1 {
			p.odd = true
		}
		p.owner[pages[i]] = 0
		if p.refs[pages[i]] > 0 {
			p.refs[pages[i]]--
		}
		p.free = append(p.free, pages[i])
	}
}

// Accounting counts the pool's pages by owner and free list.
func (p *PagePool) Accounting() PageAccounting {
	a := PageAccounting{Free: len(p.free), Total: len(p.data)}
	if !p.odd {
		a.Used = len(p.data) - len(p.free)
		return a
	}
	return p.count(a)
}

// count is Accounting page by page.
func (p *PagePool) count(a PageAccounting) PageAccounting {
	if len(p.listed) != len(p.data) {
		p.listed = make([]int32, len(p.data))
	}
	listed := p.listed
	clear(listed)
	for _, pg := range p.free {
		listed[pg]++
	}
	for pg, n := range p.refs {
		if n > 0 {
			a.Used++
		}
		if n > 1 || listed[pg] > 1 || (listed[pg] > 0 && n > 0) {
			a.OwnedTwice++
		}
	}
	return a
}

// Owner is the room a page is allocated to, 0 if free or out of range.
func (p *PagePool) Owner(page uint32) uint64 {
	if int(page) >= len(p.owner) {
		return 0
	}
	return p.owner[page]
}

// Write copies b into page at offset, as a remote RDMA write would: it does
// not ask whose page it is.
func (p *PagePool) Write(page uint32, off int, b []byte) error {
	if int(page) >= len(p.data) || off+len(b) > p.pageBytes {
		return fmt.Errorf("write page %d offset %d len %d: out of range", page, off, len(b))
	}
	if p.data[page] == nil {
		p.data[page] = make([]byte, p.pageBytes)
	}
	copy(p.data[page][off:], b)
	p.writes[page]++
	return nil
}

// Read returns n bytes at offset of page (zeros if never written).
func (p *PagePool) Read(page uint32, off, n int) []byte {
	out := make([]byte, n)
	if int(page) < len(p.data) && p.data[page] != nil {
		copy(out, p.data[page][off:off+n])
	}
	return out
}

// appendRead appends the n bytes at offset of page to b, as Read returns
// them, without a copy of its own.
func (p *PagePool) appendRead(b []byte, page uint32, off, n int) []byte {
	if int(page) < len(p.data) && p.data[page] != nil {
		return append(b, p.data[page][off:off+n]...)
	}
	for range n {
		b = append(b, 0)
	}
	return b
}

// page is page's bytes, nil if never written or out of range (it reads
// as zeros).
func (p *PagePool) page(page uint32) []byte {
	if int(page) < len(p.data) {
		return p.data[page]
	}
	return nil
}

// writesTo sums the writes the pages took: a sum unchanged since an
// earlier look means none of them was written since (counts only grow).
func (p *PagePool) writesTo(pages []uint32) uint64 {
	var n uint64
	for _, pg := range pages {
		if int(pg) < len(p.writes) {
			n += p.writes[pg]
		}
	}
	return n
}

// Used and Total report pool occupancy.
func (p *PagePool) Used() int  { return len(p.data) - len(p.free) }
func (p *PagePool) Total() int { return len(p.data) }

package hostilepeer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/zmtp"
)

// Peers is the hostile peers' shared state: where to send and what was
// sent. Make one with New; Run drives every peer until its context ends.
type Peers struct {
	wire    contract.Wire
	dialect core.Dialect
	pa      engine.PrefillAddrs
	da      engine.DecodeAddrs
	// targets are decode's KV targets per rank (Decode.KVTargets).
	targets  []string
	pageSize int

	mu    sync.Mutex
	stats Stats
}

// Stats count what the peers sent: the engine's refusal counters are
// checked against them.
type Stats struct {
	// Control messages sent to prefill, and how many of them the wire's
	// dialect cannot parse.
	Control, UnparsedControl int
	// Notices sent to decode, and how many of them cannot be parsed.
	Notices, UnparsedNotices int
	// Junk connections that break ZMTP itself, each refused.
	Junk int
	// KV messages sent to decode: malformed (the connection dropped),
	// stray (well formed, for rooms decode does not hold), or reset (below).
	KV, MalformedKV, StrayKV int
	// Reset counts stray chunks whose connection was reset as soon as
	// they were written: decode counts each as stray or sees the reset
	// first.
	Reset int
	// Routes asked of prefill's bootstrap server for ranks it does not have.
	Routes int
	// Held counts the stray chunks (in StrayKV) sent for rooms decode held
	// past their transfer, addressed to decode's own buffers.
	Held int
}

// Target is the engine the peers attack.
type Target struct {
	// Wire is the dialect both roles speak.
	Wire    contract.Wire
	Prefill engine.PrefillAddrs
	Decode  engine.DecodeAddrs
	// KVTargets are decode's KV targets per rank (engine.Decode.KVTargets).
	KVTargets []string
	// PageSize is the engine's tokens per KV page; default the engine's
	// default (contract.EngineConfig.Resolve).
	PageSize int
}

// New returns peers that attack t.
func New(t Target) (*Peers, error) {
	d, err := core.NewDialect(t.Wire)
	if err != nil {
		return nil, fmt.Errorf("hostile peers: %w", err)
	}
	switch {
	case len(t.Prefill.Control) == 0 || t.Prefill.Bootstrap == "":
		return nil, errors.New("hostile peers: prefill addresses lack a control socket or the bootstrap server")
	case len(t.Decode.Notify) == 0 || len(t.Decode.KV) == 0 || len(t.KVTargets) == 0 || t.Decode.HTTP == "":
		return nil, errors.New("hostile peers: decode addresses lack a notify socket, a KV listener, a KV target or the HTTP server")
	case t.PageSize < 0:
		return nil, fmt.Errorf("hostile peers: page size %d: want tokens per page, or 0 for the default", t.PageSize)
	}
	if t.PageSize == 0 {
		def, _, err := contract.EngineConfig{}.Resolve()
		if err != nil {
			return nil, fmt.Errorf("hostile peers: the engine's default page size: %w", err)
		}
		t.PageSize = def.PageSize
	}
	return &Peers{wire: t.Wire, dialect: d, pa: t.Prefill, da: t.Decode, targets: t.KVTargets, pageSize: t.PageSize}, nil
}

// Stats returns a copy of what was sent so far.
func (h *Peers) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Run drives every peer until ctx ends, each from its own stream of seed,
// and returns the first peer's error: a connection the engine dropped
// when it should have refused a message only, or accepted what it should
// have refused.
func (h *Peers) Run(ctx context.Context, seed uint64) error {
	g, gctx := errgroup.WithContext(ctx)
	rng := func(what string) *rand.Rand { return rand.New(rand.NewPCG(seed, hashOf(string(h.wire)+what))) }
	g.Go(func() error { return h.control(gctx, rng("control")) })
	g.Go(func() error { return h.notices(gctx, rng("notify")) })
	g.Go(func() error { return h.junk(gctx) })
	g.Go(func() error { return h.kv(gctx, rng("kv")) })
	g.Go(func() error { return h.routes(gctx) })
	if h.wire == contract.WireMooncake {
		g.Go(func() error { return h.held(gctx) })
	}
	return g.Wait()
}

func hashOf(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// routes asks prefill's bootstrap server, about a hundred times a second,
// for the route of a rank past its last (a decode with more TP ranks than
// prefill): each must be refused with 404, and the server keep serving.
func (h *Peers) routes(ctx context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Each era's query in turn, for a rank past prefill's last.
		dialects := contract.RouteDialects()
		url := fmt.Sprintf("http://%s%s?%s", h.pa.Bootstrap, contract.PathRoute,
			dialects[i%len(dialects)].Query(contract.RouteRank{TP: len(h.pa.Control) + i%4}))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("hostile route: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			if stopping(ctx) {
				return nil
			}
			return fmt.Errorf("hostile route %s: %w", url, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("hostile route %s: status %d, want 404 for a rank prefill does not have", url, resp.StatusCode)
		}
		h.count(func(s *Stats) { s.Routes++ })
	}
}

func (h *Peers) count(f func(*Stats)) {
	h.mu.Lock()
	f(&h.stats)
	h.mu.Unlock()
}

func fr(parts ...string) [][]byte {
	out := make([][]byte, len(parts))
	for i, p := range parts {
		out[i] = []byte(p)
	}
	return out
}

// controlTemplate is one well-formed decode→prefill message of the wire's
// layouts (sglang-wire.md) from a decode that is not the real one.
func (h *Peers) controlTemplate(rng *rand.Rand) [][]byte {
	room := strconv.FormatUint(rng.Uint64()>>1, 10)
	agent := fmt.Sprintf("hostile-%d", rng.IntN(8))
	session := fmt.Sprintf("10.9.9.9:%d", 20000+rng.IntN(8))
	pages := string(binary.LittleEndian.AppendUint32(nil, uint32(rng.IntN(64))))
	dip, dport, _ := net.SplitHostPort(h.da.Notify[0])
	nixl := h.wire != contract.WireMooncake
	switch rng.IntN(4) {
	case 0:
		if nixl {
			return fr(core.Guard, core.TagNone, "10.9.9.9", "1", agent, "kv=10.9.9.9:2", "", "", "", "0", "1", "0", "16", "", "", "", "", "1024", "VRAM", "")
		}
		return fr(core.TagNone, "10.9.9.9", "1", session, "\x00\x00\x00\x00\x00\x7f\x00\x00", "\x00\x00\x00\x00\x00\x7e\x00\x00", "", "0", "1", "16", "", "", "\x00\x00\x00\x00", "", "", "0", "1", "0", "")
	case 1:
		if nixl {
			return fr(core.Guard, room, "10.9.9.9", "1", agent, pages, "0", "1", "", "0")
		}
		return fr(room, "10.9.9.9", "1", session, pages, "0", "", "1", "0", "")
	case 2:
		return fr(core.TagAbort, room, dip, dport)
	default:
		tags := []string{core.TagAbortAck, core.TagKVStatus, "WATERMARK", "STAGING_RSP", "AUX_DATA", "None", core.Guard, room, "", "\xff\xfe"}
		return fr(tags[rng.IntN(len(tags))], room, "0", "1")
	}
}

// mutate damages a message the ways a broken or hostile peer would:
// truncated, frames dropped, replaced, corrupted, duplicated, reordered or
// oversized. It leaves a message of at least one frame.
func mutate(rng *rand.Rand, m [][]byte) [][]byte {
	m = append([][]byte(nil), m...)
	for range rng.IntN(3) {
		i := rng.IntN(len(m))
		switch rng.IntN(7) {
		case 0:
			m = m[:1+rng.IntN(len(m))]
		case 1:
			if len(m) > 1 {
				m = append(m[:i], m[i+1:]...)
			}
		case 2:
			junk := make([]byte, rng.IntN(40))
			for k := range junk {
				junk[k] = byte(rng.UintN(256))
			}
			m[i] = junk
		case 3:
			if len(m[i]) > 0 {
				b := bytes.Clone(m[i])
				b[rng.IntN(len(b))] ^= byte(1 + rng.UintN(255))
				m[i] = b
			}
		case 4:
			m = append(m[:i+1], m[i:]...)
		case 5:
			j := rng.IntN(len(m))
			m[i], m[j] = m[j], m[i]
		case 6:
			m[i] = bytes.Repeat([]byte{'9'}, 300<<10)
		}
	}
	return m
}

// control sends damaged and intact control messages to prefill's control
// socket until ctx ends, redialling when prefill drops the connection.
func (h *Peers) control(ctx context.Context, rng *rand.Rand) error {
	return h.push(ctx, h.pa.Control[0], func() ([][]byte, func()) {
		m := h.controlTemplate(rng)
		if rng.IntN(5) > 0 {
			m = mutate(rng, m)
		}
		_, err := h.dialect.ParseControl(m)
		return m, func() {
			h.count(func(s *Stats) {
				s.Control++
				if err != nil {
					s.UnparsedControl++
				}
			})
		}
	})
}

// notices sends damaged ABORT_ACKs and status notices, and intact status
// notices in states no prefill sends, for rooms decode does not hold to
// decode's notify socket.
func (h *Peers) notices(ctx context.Context, rng *rand.Rand) error {
	return h.push(ctx, h.da.Notify[0], func() ([][]byte, func()) {
		room := strconv.FormatUint(rng.Uint64()>>1, 10)
		status := core.Failed
		kind := rng.IntN(4)
		if kind == 0 {
			// Intact, with a state no prefill sends: decode ignores it.
			status = []core.KVPoll{core.WaitingForInput, core.Transferring}[rng.IntN(2)]
		}
		m := h.dialect.Status(0, status, 0, "hostile")
		m[map[bool]int{true: 0, false: 1}[h.wire == contract.WireMooncake]] = []byte(room)
		switch kind {
		case 0:
		case 1:
			m = mutate(rng, fr(core.TagAbortAck, room, "0"))
		default:
			m = mutate(rng, m)
		}
		_, err := h.dialect.ParseNotice(m)
		return m, func() {
			h.count(func(s *Stats) {
				s.Notices++
				if err != nil {
					s.UnparsedNotices++
				}
			})
		}
	})
}

// push sends next's messages over one ZMTP PUSH connection to addr until
// ctx ends, about a thousand a second, and commits each once it is sent.
func (h *Peers) push(ctx context.Context, addr string, next func() (m [][]byte, commit func())) error {
	p, err := zmtp.Dial(ctx, addr)
	if err != nil {
		if stopping(ctx) {
			return nil
		}
		return fmt.Errorf("hostile dial %s: %w", addr, err)
	}
	defer p.Close()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		m, commit := next()
		// Not cut short by the end of the storm: half a message would be a
		// refusal the test does not count.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := p.Send(sctx, m)
		cancel()
		if err != nil {
			return fmt.Errorf("hostile send to %s: prefill or decode dropped a well-framed connection: %w", addr, err)
		}
		commit()
	}
	return nil
}

// junk opens connections to prefill's control socket that break ZMTP
// itself: an HTTP request instead of a greeting, a frame with reserved
// flags, a frame announcing 2^60 bytes, and a message of endless empty
// frames. Each is refused by dropping the connection.
func (h *Peers) junk(ctx context.Context) error {
	ready := append(zmtp.NewGreeting().Bytes(), zmtp.AppendFrame(nil, zmtp.ReadyFrame(zmtp.TypePush, nil))...)
	cases := [][]byte{
		[]byte("GET /route HTTP/1.1\r\nHost: x\r\n\r\n" + string(make([]byte, 64))),
		append(bytes.Clone(ready), 0xF0, 1, 2),
		append(bytes.Clone(ready), zmtp.FlagLong, 0x10, 0, 0, 0, 0, 0, 0, 0),
		append(bytes.Clone(ready), bytes.Repeat([]byte{zmtp.FlagMore, 0}, zmtp.MaxMessageFrames+1)...),
	}
	var d net.Dialer
	for i := 0; ctx.Err() == nil; i++ {
		conn, err := dialWrite(ctx, &d, h.pa.Control[0], cases[i%len(cases)])
		if conn == nil {
			return wrap("hostile junk", err)
		}
		if err == nil {
			// Prefill answers with its greeting (and READY), then drops
			// the connection: read to its end, so it is counted before
			// the test looks.
			_, err = io.Copy(io.Discard, conn)
		}
		_ = conn.Close()
		if err != nil && !errors.Is(err, syscall.ECONNRESET) && !stopping(ctx) {
			return fmt.Errorf("hostile junk %d: prefill did not drop the connection: %w", i%len(cases), err)
		}
		h.count(func(s *Stats) { s.Junk++ })
	}
	return nil
}

// stopping reports whether ctx has ended or is at its deadline: a dial
// or read can fail on the deadline a moment before ctx.Err() says so.
func stopping(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(dl)
}

// dialWrite opens a connection of its own to addr, bounded to 5 s, and
// writes b on it. conn is nil when the dial failed: err says why, or is
// nil when the dial failed because the peers are stopping. Otherwise err
// is the write's.
func dialWrite(ctx context.Context, d *net.Dialer, addr string, b []byte) (conn net.Conn, err error) {
	conn, err = d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if stopping(ctx) {
			return nil, nil
		}
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Write(b)
	return conn, err
}

// wrap prefixes a non-nil err with what was being done.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// kvMsg encodes one KV message as engine/kvwire.go lays it out.
func kvMsg(kind byte, room uint64, rank uint16, npages uint32, pages []uint32, payloadLen uint32, payload []byte, agent string) []byte {
	b := []byte{kind}
	b = binary.BigEndian.AppendUint64(b, room)
	b = binary.BigEndian.AppendUint32(b, 0) // chunk id
	b = append(b, 0)                        // last
	b = binary.BigEndian.AppendUint16(b, rank)
	b = binary.BigEndian.AppendUint32(b, 0) // first token
	b = binary.BigEndian.AppendUint32(b, npages)
	for _, p := range pages {
		b = binary.BigEndian.AppendUint32(b, p)
	}
	b = binary.BigEndian.AppendUint32(b, payloadLen)
	b = append(b, payload...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(agent)))
	return append(b, agent...)
}

// kv sends malformed KV messages to decode's KV listener, one connection
// each, until ctx ends: unknown kind, truncated, too many pages, too large
// a payload, another rank's chunk (each drops the connection), a chunk and
// a completion notice for rooms decode does not hold under a stale agent
// name (stray, refused), such a chunk on a connection reset once it is
// written (decode's reply fails), and on Mooncake, a chunk addressed to decode's
// own session and buffers whose payload is not whole tokens.
func (h *Peers) kv(ctx context.Context, rng *rand.Rand) error {
	tok := bytes.Repeat([]byte{0xAB}, model.KVBytesPerToken)
	var d net.Dialer
	for ctx.Err() == nil {
		room := rng.Uint64() >> 1
		type kvCase struct {
			b         []byte
			reply     bool
			malformed bool
			// reset: the peer resets the connection as soon as the
			// message is written, so decode's completion reply finds no
			// one to take it (counted in Reset, not in StrayKV: decode
			// may see the reset before the message).
			reset bool
		}
		cases := []kvCase{
			{b: kvMsg(9, room, 0, 0, nil, 0, nil, "x"), malformed: true},
			{b: kvMsg(1, room, 0, 4, []uint32{1}, 0, nil, "")[:30], malformed: true},
			{b: kvMsg(1, room, 0, 1<<21, nil, 0, nil, "")[:24], malformed: true},
			{b: kvMsg(1, room, 0, 0, nil, 0xFFFFFFFF, nil, "")[:28], malformed: true},
			{b: kvMsg(1, room, 1, 0, nil, uint32(len(tok)), tok, "x"), malformed: true},
			{b: kvMsg(1, room, 0, 1, []uint32{0}, uint32(len(tok)), tok, "stale-agent"), reply: true},
			{b: kvMsg(2, room, 0, 0, nil, 0, nil, "stale-agent"), reply: true},
			{b: kvMsg(1, room, 0, 1, []uint32{0}, uint32(len(tok)), tok, "stale-agent"), reset: true},
		}
		if h.wire == contract.WireMooncake {
			// Addressed to decode's own session and buffers, so they pass
			// the agent check: a payload that is not whole tokens, and one
			// token more than its single page holds, that page past the
			// pool (nothing lands; the overrun is dropped, then the room
			// found stray).
			over := bytes.Repeat(tok, h.pageSize+1)
			cases = append(cases,
				kvCase{b: kvMsg(1, room, 0, 1, []uint32{0}, 5, tok[:5], h.targets[0]), reply: true, malformed: true},
				kvCase{b: kvMsg(1, room, 0, 1, []uint32{math.MaxUint32}, uint32(len(over)), over, h.targets[0]), reply: true})
		}
		for _, c := range cases {
			conn, err := dialWrite(ctx, &d, h.da.KV[0], c.b)
			if conn == nil {
				return wrap("hostile kv", err)
			}
			if c.reset {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // Close sends RST, not FIN
				}
				_ = conn.Close()
				h.count(func(s *Stats) { s.KV++; s.Reset++ })
				continue
			}
			if err == nil && c.reply {
				var reply [1]byte
				if _, err = conn.Read(reply[:]); err == nil && reply[0] != contract.KVReplyInactive {
					err = fmt.Errorf("decode accepted a hostile KV message (reply %d)", reply[0])
				}
			}
			_ = conn.Close()
			if err != nil {
				return fmt.Errorf("hostile kv: %w", err)
			}
			h.count(func(s *Stats) {
				s.KV++
				if c.malformed {
					s.MalformedKV++
				} else {
					s.StrayKV++
				}
			})
		}
	}
	return nil
}

// held sends, about every 10 ms, an empty chunk (no pages, no payload)
// addressed to decode's own session and buffers for each room decode holds
// past its transfer (committed, still decoding), as /debug/rooms lists
// them: decode refuses it as stray and nothing lands. A room's Success
// state is not enough: prefill's Success notice can come before decode
// has taken the last chunk, and a chunk then would count as one of its
// own.
// Mooncake only: a NIXL decode's agent names are per prefill and epoch,
// which a stranger cannot know.
func (h *Peers) held(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := map[uint64]bool{}
	var d net.Dialer
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		rooms, err := testkit.Rooms(ctx, "http://"+h.da.HTTP)
		if err != nil {
			if stopping(ctx) {
				return nil
			}
			return fmt.Errorf("hostile held rooms: %w", err)
		}
		for _, r := range rooms.Held {
			if sent[r.Room] || !committed(r) {
				continue
			}
			sent[r.Room] = true
			conn, err := dialWrite(ctx, &d, h.da.KV[0], kvMsg(1, r.Room, 0, 0, nil, 0, nil, h.targets[0]))
			if conn == nil {
				return wrap("hostile held-room kv", err)
			}
			var reply [1]byte
			if err == nil {
				if _, err = conn.Read(reply[:]); err == nil && reply[0] != contract.KVReplyInactive {
					err = fmt.Errorf("decode took a chunk for room %d it holds past its transfer (reply %d)", r.Room, reply[0])
				}
			}
			_ = conn.Close()
			if err != nil {
				return fmt.Errorf("hostile held-room kv: %w", err)
			}
			h.count(func(s *Stats) { s.KV++; s.StrayKV++; s.Held++ })
		}
	}
}

// committed reports whether decode's record of a room says its KV was
// taken as complete (decode writes that note in the step that commits).
func committed(r contract.RoomRecord) bool {
	for _, e := range r.Events {
		if e.Kind == contract.RoomEventCommitted {
			return true
		}
	}
	return false
}

// Malformed sends prefill's first control socket one message its dialect
// cannot parse (a tag no SGLang build sends, then junk), on a connection of
// its own: what kills the bootstrap thread of builds that unpack frames
// unguarded (regression bootstrap-thread-death).
func (h *Peers) Malformed(ctx context.Context) error {
	m := fr("\xff\xfeHOSTILE", "not a room", "\x00")
	if _, err := h.dialect.ParseControl(m); err == nil {
		return fmt.Errorf("hostile malformed message: the %s dialect parses it", h.wire)
	}
	p, err := zmtp.Dial(ctx, h.pa.Control[0])
	if err != nil {
		return fmt.Errorf("hostile dial %s: %w", h.pa.Control[0], err)
	}
	defer p.Close()
	if err := p.Send(ctx, m); err != nil {
		return fmt.Errorf("hostile send to %s: %w", h.pa.Control[0], err)
	}
	h.count(func(s *Stats) { s.Control++; s.UnparsedControl++ })
	return nil
}

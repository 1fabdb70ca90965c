package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/core"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/zmtp"
)

// hostile is the peers' shared state: where to send and what was sent.
type hostile struct {
	wire    contract.Wire
	dialect core.Dialect
	pa      engine.PrefillAddrs
	da      engine.DecodeAddrs
	// targets are decode's KV targets per rank (Decode.KVTargets).
	targets []string

	mu    sync.Mutex
	stats hostileStats
}

type hostileStats struct {
	control, unparsedControl int
	notices, unparsedNotices int
	junk                     int
	kv, malformedKV, strayKV int
}

func (h *hostile) count(f func(*hostileStats)) {
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
func (h *hostile) controlTemplate(rng *rand.Rand) [][]byte {
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
func (h *hostile) control(ctx context.Context, rng *rand.Rand) error {
	return h.push(ctx, h.pa.Control[0], func() ([][]byte, func()) {
		m := h.controlTemplate(rng)
		if rng.IntN(5) > 0 {
			m = mutate(rng, m)
		}
		_, err := h.dialect.ParseControl(m)
		return m, func() {
			h.count(func(s *hostileStats) {
				s.control++
				if err != nil {
					s.unparsedControl++
				}
			})
		}
	})
}

// notices sends damaged ABORT_ACKs and status notices for rooms decode
// does not hold to decode's notify socket.
func (h *hostile) notices(ctx context.Context, rng *rand.Rand) error {
	return h.push(ctx, h.da.Notify[0], func() ([][]byte, func()) {
		room := strconv.FormatUint(rng.Uint64()>>1, 10)
		m := h.dialect.Status(0, core.Failed, 0, "hostile")
		m[map[bool]int{true: 0, false: 1}[h.wire == contract.WireMooncake]] = []byte(room)
		if rng.IntN(2) == 0 {
			m = fr(core.TagAbortAck, room, "0")
		}
		m = mutate(rng, m)
		_, err := h.dialect.ParseNotice(m)
		return m, func() {
			h.count(func(s *hostileStats) {
				s.notices++
				if err != nil {
					s.unparsedNotices++
				}
			})
		}
	})
}

// push sends next's messages over one ZMTP PUSH connection to addr until
// ctx ends, about a thousand a second, and commits each once it is sent.
func (h *hostile) push(ctx context.Context, addr string, next func() (m [][]byte, commit func())) error {
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
func (h *hostile) junk(ctx context.Context) error {
	ready := append(zmtp.NewGreeting().Bytes(), zmtp.AppendFrame(nil, zmtp.ReadyFrame(zmtp.TypePush, nil))...)
	cases := [][]byte{
		[]byte("GET /route HTTP/1.1\r\nHost: x\r\n\r\n" + string(make([]byte, 64))),
		append(bytes.Clone(ready), 0xF0, 1, 2),
		append(bytes.Clone(ready), zmtp.FlagLong, 0x10, 0, 0, 0, 0, 0, 0, 0),
		append(bytes.Clone(ready), bytes.Repeat([]byte{zmtp.FlagMore, 0}, zmtp.MaxMessageFrames+1)...),
	}
	var d net.Dialer
	for i := 0; ctx.Err() == nil; i++ {
		conn, err := d.DialContext(ctx, "tcp", h.pa.Control[0])
		if err != nil {
			if stopping(ctx) {
				return nil
			}
			return fmt.Errorf("hostile junk dial: %w", err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Write(cases[i%len(cases)])
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
		h.count(func(s *hostileStats) { s.junk++ })
	}
	return nil
}

// stopping reports whether ctx has ended or is at its deadline: a dial
// or read can fail on the deadline a moment before ctx.Err() says so.
func stopping(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(dl)
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
// name (stray, refused), and on Mooncake, a chunk addressed to decode's
// own session and buffers whose payload is not whole tokens.
func (h *hostile) kv(ctx context.Context, rng *rand.Rand) error {
	tok := bytes.Repeat([]byte{0xAB}, model.KVBytesPerToken)
	var d net.Dialer
	for ctx.Err() == nil {
		room := rng.Uint64() >> 1
		type kvCase struct {
			b         []byte
			reply     bool
			malformed bool
		}
		cases := []kvCase{
			{b: kvMsg(9, room, 0, 0, nil, 0, nil, "x"), malformed: true},
			{b: kvMsg(1, room, 0, 4, []uint32{1}, 0, nil, "")[:30], malformed: true},
			{b: kvMsg(1, room, 0, 1<<21, nil, 0, nil, "")[:24], malformed: true},
			{b: kvMsg(1, room, 0, 0, nil, 0xFFFFFFFF, nil, "")[:28], malformed: true},
			{b: kvMsg(1, room, 1, 0, nil, uint32(len(tok)), tok, "x"), malformed: true},
			{b: kvMsg(1, room, 0, 1, []uint32{0}, uint32(len(tok)), tok, "stale-agent"), reply: true},
			{b: kvMsg(2, room, 0, 0, nil, 0, nil, "stale-agent"), reply: true},
		}
		if h.wire == contract.WireMooncake {
			cases = append(cases, kvCase{b: kvMsg(1, room, 0, 1, []uint32{0}, 5, tok[:5], h.targets[0]), reply: true, malformed: true})
		}
		for _, c := range cases {
			conn, err := d.DialContext(ctx, "tcp", h.da.KV[0])
			if err != nil {
				if stopping(ctx) {
					return nil
				}
				return fmt.Errorf("hostile kv dial: %w", err)
			}
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Write(c.b)
			if err == nil && c.reply {
				var reply [1]byte
				if _, err = conn.Read(reply[:]); err == nil && reply[0] != 1 {
					err = fmt.Errorf("decode accepted a hostile KV message (reply %d)", reply[0])
				}
			}
			_ = conn.Close()
			if err != nil {
				return fmt.Errorf("hostile kv: %w", err)
			}
			h.count(func(s *hostileStats) {
				s.kv++
				if c.malformed {
					s.malformedKV++
				} else {
					s.strayKV++
				}
			})
		}
	}
	return nil
}

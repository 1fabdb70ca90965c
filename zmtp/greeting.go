package zmtp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// GreetingSize is the fixed length of a ZMTP 3.x greeting; a proxy relays
// exactly this many bytes before it starts parsing frames.
const GreetingSize = 64

// Version we announce. Peers announcing any 3.x minor are accepted; the
// behaviour we use (NULL, READY, PING/PONG) is the same in 3.0 and 3.1.
const (
	VersionMajor = 3
	VersionMinor = 1
)

// MechanismNull is the only security mechanism the sockets implement.
const MechanismNull = "NULL"

// ErrProtocol is wrapped by every error caused by bytes a peer sent that do
// not follow ZMTP 3.x, so callers can tell a misbehaving peer from I/O
// failure.
var ErrProtocol = errors.New("zmtp protocol error")

// Greeting is the decoded 64-byte greeting each peer sends first. A proxy
// parses it to learn the version and mechanism of the connection it relays.
type Greeting struct {
	Major, Minor byte
	// Mechanism is the security mechanism name, e.g. "NULL" or "CURVE".
	Mechanism string
	// AsServer is the as-server flag (meaningful for PLAIN and CURVE only).
	AsServer bool
}

// NewGreeting returns our own greeting: ZMTP 3.1 with the NULL mechanism.
func NewGreeting() Greeting {
	return Greeting{Major: VersionMajor, Minor: VersionMinor, Mechanism: MechanismNull}
}

// Bytes encodes the greeting in its 64-byte wire form.
func (g Greeting) Bytes() []byte {
	b := make([]byte, GreetingSize)
	b[0] = 0xFF
	b[9] = 0x7F
	b[10] = g.Major
	b[11] = g.Minor
	copy(b[12:32], g.Mechanism)
	if g.AsServer {
		b[32] = 1
	}
	return b
}

// ParseGreeting decodes a 64-byte greeting, rejecting anything that is not
// ZMTP 3.x (ZMTP 1.0/2.0 peers and garbage) with a wrapped ErrProtocol.
func ParseGreeting(b []byte) (Greeting, error) {
	if len(b) != GreetingSize {
		return Greeting{}, fmt.Errorf("%w: greeting is %d bytes, want %d", ErrProtocol, len(b), GreetingSize)
	}
	if b[0] != 0xFF || b[9] != 0x7F {
		return Greeting{}, fmt.Errorf("%w: bad greeting signature % x", ErrProtocol, b[:10])
	}
	if b[10] < 3 {
		return Greeting{}, fmt.Errorf("%w: peer speaks ZMTP %d.%d, need 3.x", ErrProtocol, b[10], b[11])
	}
	mech := b[12:32]
	if i := bytes.IndexByte(mech, 0); i >= 0 {
		if bytes.ContainsFunc(mech[i:], func(r rune) bool { return r != 0 }) {
			return Greeting{}, fmt.Errorf("%w: mechanism field not zero-padded", ErrProtocol)
		}
		mech = mech[:i]
	}
	if len(mech) == 0 {
		return Greeting{}, fmt.Errorf("%w: empty mechanism", ErrProtocol)
	}
	if b[32] > 1 {
		return Greeting{}, fmt.Errorf("%w: as-server flag is %d", ErrProtocol, b[32])
	}
	return Greeting{Major: b[10], Minor: b[11], Mechanism: string(mech), AsServer: b[32] == 1}, nil
}

// ReadGreeting reads and decodes one greeting from r.
func ReadGreeting(r io.Reader) (Greeting, error) {
	b := make([]byte, GreetingSize)
	if _, err := io.ReadFull(r, b); err != nil {
		return Greeting{}, fmt.Errorf("read greeting: %w", err)
	}
	return ParseGreeting(b)
}

package zmtp

import (
	"encoding/binary"
	"fmt"
)

// Command names the sockets send or understand.
const (
	CmdReady = "READY"
	CmdError = "ERROR"
	CmdPing  = "PING"
	CmdPong  = "PONG"
)

// Property names used in READY.
const (
	PropSocketType = "Socket-Type"
	PropIdentity   = "Identity"
)

// ParseCommand splits a command frame body into its name and data, so the
// sockets and a proxy can recognise READY, PING and ERROR.
func ParseCommand(body []byte) (name string, data []byte, err error) {
	if len(body) < 1 {
		return "", nil, fmt.Errorf("%w: empty command frame", ErrProtocol)
	}
	n := int(body[0])
	if n == 0 || 1+n > len(body) {
		return "", nil, fmt.Errorf("%w: command name length %d in %d-byte frame", ErrProtocol, n, len(body))
	}
	return string(body[1 : 1+n]), body[1+n:], nil
}

// CommandFrame builds a command frame from a name and its data.
func CommandFrame(name string, data []byte) Frame {
	body := make([]byte, 0, 1+len(name)+len(data))
	body = append(body, byte(len(name)))
	body = append(body, name...)
	body = append(body, data...)
	return Frame{Flags: FlagCommand, Body: body}
}

// Property is one name/value pair of a READY command's metadata.
type Property struct {
	Name  string
	Value []byte
}

// ParseProperties decodes READY metadata (1-byte name length, name, 4-byte
// big-endian value length, value; repeated).
func ParseProperties(data []byte) ([]Property, error) {
	var props []Property
	for len(data) > 0 {
		n := int(data[0])
		if n == 0 || 1+n+4 > len(data) {
			return nil, fmt.Errorf("%w: truncated property name (length %d, %d bytes left)", ErrProtocol, n, len(data))
		}
		name := string(data[1 : 1+n])
		data = data[1+n:]
		vlen := binary.BigEndian.Uint32(data[:4])
		data = data[4:]
		if uint64(vlen) > uint64(len(data)) {
			return nil, fmt.Errorf("%w: property %q value length %d, %d bytes left", ErrProtocol, name, vlen, len(data))
		}
		props = append(props, Property{Name: name, Value: data[:vlen]})
		data = data[vlen:]
	}
	return props, nil
}

// AppendProperty appends one encoded property to b.
func AppendProperty(b []byte, name string, value []byte) []byte {
	b = append(b, byte(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

// ReadyFrame builds the READY command a socket of socketType sends.
func ReadyFrame(socketType string, identity []byte) Frame {
	data := AppendProperty(nil, PropSocketType, []byte(socketType))
	if identity != nil {
		data = AppendProperty(data, PropIdentity, identity)
	}
	return CommandFrame(CmdReady, data)
}

// pongFor answers a PING: PONG echoes the ping's context (after its 2-byte TTL).
func pongFor(pingData []byte) (Frame, bool) {
	if len(pingData) < 2 || len(pingData) > 2+16 {
		return Frame{}, false
	}
	return CommandFrame(CmdPong, pingData[2:]), true
}

package zmtp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// ErrClosed is returned by Recv and Send after Close.
var ErrClosed = errors.New("zmtp socket closed")

// HandshakeTimeout bounds the greeting and READY exchange on an accepted
// connection, so a peer that connects and says nothing cannot hold a
// goroutine until Close.
const HandshakeTimeout = 10 * time.Second

// Socket types this package implements.
const (
	TypePush = "PUSH"
	TypePull = "PULL"
)

// readBufSize is the per-connection read buffer; with the one-message
// hand-off in Pull it bounds memory per peer (plus one message).
const readBufSize = 64 << 10

// peerType is the only socket type each of ours accepts as a peer.
var peerType = map[string]string{TypePush: TypePull, TypePull: TypePush}

// past is a deadline in the past, used to interrupt blocked I/O.
var past = time.Unix(1, 0)

// hostPort accepts "host:port" and "tcp://host:port" (with "*" for any
// interface on bind).
func hostPort(addr string) (string, error) {
	a := strings.TrimPrefix(addr, "tcp://")
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", fmt.Errorf("parse address %q: %w", addr, err)
	}
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, port), nil
}

// handshake exchanges greetings and READY commands as socket type self. It
// writes our greeting before reading the peer's (libzmq sends its greeting
// in parts and waits for ours). ctx cancellation interrupts it.
func handshake(ctx context.Context, conn net.Conn, br *bufio.Reader, self string) (Greeting, []Property, error) {
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(past) })
	defer stop()
	g, props, err := doHandshake(conn, br, self)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return g, props, err
}

func doHandshake(conn net.Conn, br *bufio.Reader, self string) (Greeting, []Property, error) {
	if _, err := conn.Write(NewGreeting().Bytes()); err != nil {
		return Greeting{}, nil, fmt.Errorf("send greeting: %w", err)
	}
	g, err := ReadGreeting(br)
	if err != nil {
		return Greeting{}, nil, err
	}
	if g.Mechanism != MechanismNull {
		return g, nil, fmt.Errorf("%w: peer mechanism %q, only NULL is supported", ErrProtocol, g.Mechanism)
	}
	if err := WriteFrame(conn, ReadyFrame(self, nil)); err != nil {
		return g, nil, fmt.Errorf("send READY: %w", err)
	}
	for {
		f, err := ReadFrame(br)
		if err != nil {
			return g, nil, fmt.Errorf("read READY: %w", err)
		}
		if !f.IsCommand() {
			return g, nil, fmt.Errorf("%w: message frame before READY", ErrProtocol)
		}
		name, data, err := ParseCommand(f.Body)
		if err != nil {
			return g, nil, fmt.Errorf("read READY: %w", err)
		}
		switch name {
		case CmdReady:
			props, err := ParseProperties(data)
			if err != nil {
				return g, nil, fmt.Errorf("parse READY: %w", err)
			}
			if err := checkPeerType(self, props); err != nil {
				return g, props, err
			}
			return g, props, nil
		case CmdError:
			return g, nil, fmt.Errorf("%w: peer sent ERROR %q", ErrProtocol, errorReason(data))
		default:
			// PING and unknown commands before READY are tolerated.
		}
	}
}

func checkPeerType(self string, props []Property) error {
	for _, p := range props {
		if strings.EqualFold(p.Name, PropSocketType) {
			if got := string(p.Value); !strings.EqualFold(got, peerType[self]) {
				return fmt.Errorf("%w: %s cannot talk to a %s peer", ErrProtocol, self, got)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: READY without %s", ErrProtocol, PropSocketType)
}

func errorReason(data []byte) string {
	if len(data) < 1 || int(data[0]) > len(data)-1 {
		return string(data)
	}
	return string(data[1 : 1+int(data[0])])
}

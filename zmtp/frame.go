package zmtp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Frame flag bits (ZMTP 3.x). The other five bits are reserved and must be
// zero.
const (
	// FlagMore says another frame of the same message follows.
	FlagMore byte = 0x01
	// FlagLong says the size is 8 bytes (big-endian) instead of 1.
	FlagLong byte = 0x02
	// FlagCommand says the frame is a command, not part of a message.
	FlagCommand byte = 0x04

	flagsReserved byte = 0xF8
)

// MaxFrameSize bounds the size a peer may announce for one frame, so a
// corrupt or hostile length cannot make a reader allocate without bound.
const MaxFrameSize = 1 << 30

// MaxMessageFrames bounds the frames of one multipart message, so a peer
// that sends empty frames with MORE set forever cannot grow a reader's
// memory without bound. SGLang's longest control message has about 20.
const MaxMessageFrames = 4096

// MaxMessageSize bounds the bytes of one multipart message, all frames
// together, for the same reason: each frame alone is bounded by
// MaxFrameSize.
const MaxMessageSize = MaxFrameSize

// eagerBody is the largest body allocated up front; bigger bodies grow as
// bytes actually arrive.
const eagerBody = 1 << 20

// Frame is one ZMTP frame. Flags keeps the bits as read (including
// FlagLong), so WriteFrame reproduces the original encoding exactly; a
// proxy relies on that to stay byte-for-byte transparent.
type Frame struct {
	Flags byte
	Body  []byte
}

// More reports whether another frame of the same message follows.
func (f Frame) More() bool { return f.Flags&FlagMore != 0 }

// IsCommand reports whether the frame is a command (READY, PING, …) rather
// than part of a message.
func (f Frame) IsCommand() bool { return f.Flags&FlagCommand != 0 }

// long reports whether the frame is encoded with an 8-byte size: when the
// flag was set on the wire or the body does not fit a short frame.
func (f Frame) long() bool { return f.Flags&FlagLong != 0 || len(f.Body) > 255 }

// Header encodes the flags and size that precede the body on the wire.
func (f Frame) Header() []byte {
	flags := f.Flags &^ flagsReserved
	if f.long() {
		h := make([]byte, 9)
		h[0] = flags | FlagLong
		binary.BigEndian.PutUint64(h[1:], uint64(len(f.Body)))
		return h
	}
	return []byte{flags, byte(len(f.Body))}
}

// AppendFrame appends the wire encoding of f to b.
func AppendFrame(b []byte, f Frame) []byte {
	return append(append(b, f.Header()...), f.Body...)
}

// WriteFrame writes the wire encoding of f to w.
func WriteFrame(w io.Writer, f Frame) error {
	if _, err := w.Write(AppendFrame(nil, f)); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame from r. Malformed input (reserved flag bits, a
// size over MaxFrameSize, a truncated frame) gives an error, never a panic.
func ReadFrame(r io.Reader) (Frame, error) { return readFrame(r, MaxFrameSize) }

// readFrame is ReadFrame refusing a frame that announces more than limit
// bytes before it allocates or reads its body.
func readFrame(r io.Reader, limit uint64) (Frame, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:1]); err != nil {
		return Frame{}, fmt.Errorf("read frame flags: %w", err)
	}
	flags := hdr[0]
	if flags&flagsReserved != 0 {
		return Frame{}, fmt.Errorf("%w: reserved frame flag bits set (0x%02x)", ErrProtocol, flags)
	}
	var size uint64
	if flags&FlagLong != 0 {
		if _, err := io.ReadFull(r, hdr[1:9]); err != nil {
			return Frame{}, fmt.Errorf("read long frame size: %w", unexpected(err))
		}
		size = binary.BigEndian.Uint64(hdr[1:9])
	} else {
		if _, err := io.ReadFull(r, hdr[1:2]); err != nil {
			return Frame{}, fmt.Errorf("read frame size: %w", unexpected(err))
		}
		size = uint64(hdr[1])
	}
	if size > limit {
		return Frame{}, fmt.Errorf("%w: frame size %d over limit %d", ErrProtocol, size, limit)
	}
	body, err := readBody(r, int64(size))
	if err != nil {
		return Frame{}, fmt.Errorf("read frame body of %d bytes: %w", size, unexpected(err))
	}
	return Frame{Flags: flags, Body: body}, nil
}

// unexpected turns a clean EOF inside a frame into ErrUnexpectedEOF: the
// peer stopped mid-frame.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func readBody(r io.Reader, n int64) ([]byte, error) {
	if n <= eagerBody {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	var buf bytes.Buffer
	buf.Grow(eagerBody)
	got, err := io.CopyN(&buf, r, n)
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

// ReadMessage reads the frames of one multipart message from r. Commands
// that arrive before or between the message's frames are passed to onCommand
// (which may be nil) and not returned. A message of more than
// MaxMessageFrames frames or MaxMessageSize bytes is refused with
// ErrProtocol once the limit is crossed, before more is read.
func ReadMessage(r io.Reader, onCommand func(Frame) error) ([][]byte, error) {
	var frames [][]byte
	var size uint64
	for {
		f, err := readFrame(r, MaxMessageSize-size)
		if err != nil {
			if len(frames) > 0 {
				err = unexpected(err)
			}
			return nil, err
		}
		if f.IsCommand() {
			if onCommand != nil {
				if err := onCommand(f); err != nil {
					return nil, err
				}
			}
			continue
		}
		if len(frames) == MaxMessageFrames {
			return nil, fmt.Errorf("%w: message over %d frames", ErrProtocol, MaxMessageFrames)
		}
		size += uint64(len(f.Body))
		frames = append(frames, f.Body)
		if !f.More() {
			return frames, nil
		}
	}
}

// MessageFrames turns a multipart message into frames with MORE set on all
// but the last, ready for WriteFrame.
func MessageFrames(msg [][]byte) []Frame {
	out := make([]Frame, len(msg))
	for i, b := range msg {
		out[i] = Frame{Body: b}
		if i < len(msg)-1 {
			out[i].Flags = FlagMore
		}
	}
	return out
}

package faults

import (
	"fmt"
	"strings"
)

// Corruption modes of the corrupt-messages fault (the frame proxy's
// protocol.Corrupt, and the simulator's model of it).
const (
	// CorruptTruncate cuts the message's last frame off, as a sender
	// that died mid-message or an older layout would.
	CorruptTruncate = "truncate"
	// CorruptGarble replaces every all-digit frame (room, port, page
	// counts) with bytes that are not a number.
	CorruptGarble = "garble"
)

// CorruptName is a corrupt-messages fault's name, corrupt(LINK,KINDS,MODE)
// (KINDS joined with "+", "all" when empty; MODE garble when empty): its
// evidence is keyed by it, live and simulated, and integrity reads the
// link and mode back with ParseCorruptName.
func CorruptName(link string, kinds []string, mode string) string {
	k := "all"
	if len(kinds) > 0 {
		k = strings.Join(kinds, "+")
	}
	if mode == "" {
		mode = CorruptGarble
	}
	return fmt.Sprintf("corrupt(%s,%s,%s)", link, k, mode)
}

// ParseCorruptName reads CorruptName's link and mode back; false for
// another name.
func ParseCorruptName(name string) (link, mode string, ok bool) {
	inner, found := strings.CutPrefix(name, "corrupt(")
	if !found || !strings.HasSuffix(inner, ")") {
		return "", "", false
	}
	parts := strings.Split(strings.TrimSuffix(inner, ")"), ",")
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// CorruptModes lists the corruption modes.
func CorruptModes() []string { return []string{CorruptTruncate, CorruptGarble} }

// CorruptFrames is frames corrupted by mode (CorruptTruncate or
// CorruptGarble), a fresh slice: truncate drops the last frame (garbles a
// one-frame message), garble replaces each all-digit frame (and truncates
// a message with none). A garbled room no parser reads as a room; a
// truncated layout with optional trailing frames may still parse.
func CorruptFrames(frames [][]byte, mode string) [][]byte {
	out := make([][]byte, 0, len(frames))
	if mode == CorruptTruncate && len(frames) > 1 {
		return append(out, frames[:len(frames)-1]...)
	}
	garbled := false
	for _, f := range frames {
		if isDigits(f) {
			f = append([]byte("pdchaos-corrupt-"), f...)
			garbled = true
		}
		out = append(out, f)
	}
	if !garbled && len(out) > 1 {
		out = out[:len(out)-1]
	}
	if len(out) == 1 && !garbled {
		out[0] = append([]byte("pdchaos-corrupt-"), out[0]...)
	}
	return out
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Package jsonlite reads JSON laid out exactly as one known writer lays it
// out (encoding/json's Marshal of a fixed struct: fields in order, no
// space), without reflection, for the few values the engine reads once per
// request or per token. A reader built on it gives up (false) at anything
// else, and its caller hands the bytes to encoding/json instead, so what is
// read is always what encoding/json would read.
//
// It imports nothing of pdchaos.
package jsonlite

import (
	"bytes"
	"math"
	"strings"
	"unicode/utf8"
)

// Cursor walks b from offset i.
type Cursor struct {
	B []byte
	I int
}

// Lit consumes s if the bytes at the cursor are s.
func (c *Cursor) Lit(s string) bool {
	if len(c.B)-c.I < len(s) || string(c.B[c.I:c.I+len(s)]) != s {
		return false
	}
	c.I += len(s)
	return true
}

// End reports whether the cursor is at the end of the bytes.
func (c *Cursor) End() bool { return c.I == len(c.B) }

// Str reads a JSON string into dst. It gives up where encoding/json
// would change bytes (invalid UTF-8, a \u escape of a surrogate) and at
// anything that is not a valid string; escapes are otherwise undone as
// encoding/json undoes them.
func (c *Cursor) Str(dst *string) bool {
	if c.I >= len(c.B) || c.B[c.I] != '"' {
		return false
	}
	start := c.I + 1
	end, escaped := -1, false
	for j := start; j < len(c.B); j++ {
		ch := c.B[j]
		if ch == '"' {
			end = j
			break
		}
		if ch < 0x20 {
			return false
		}
		if ch == '\\' {
			escaped = true
			j++ // the escaped byte cannot end the string
		}
	}
	if end < 0 {
		return false
	}
	raw := c.B[start:end]
	if !utf8.Valid(raw) {
		return false
	}
	if !escaped {
		*dst = string(raw)
		c.I = end + 1
		return true
	}
	var out strings.Builder // its String does not copy
	out.Grow(len(raw))
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			out.Write(raw)
			break
		}
		out.Write(raw[:k])
		if k+1 >= len(raw) {
			return false
		}
		esc := raw[k+1]
		raw = raw[k+2:]
		switch esc {
		case '"', '\\', '/':
			out.WriteByte(esc)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			if len(raw) < 4 {
				return false
			}
			r, ok := hex4(raw[:4])
			if !ok || utf8.RuneLen(r) < 0 || (r >= 0xd800 && r < 0xe000) {
				return false
			}
			out.WriteRune(r)
			raw = raw[4:]
		default:
			return false
		}
	}
	*dst = out.String()
	c.I = end + 1
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) != 4 {
		return 0, false
	}
	var r rune
	for _, ch := range b {
		switch {
		case ch >= '0' && ch <= '9':
			r = r<<4 | rune(ch-'0')
		case ch >= 'a' && ch <= 'f':
			r = r<<4 | rune(ch-'a'+10)
		case ch >= 'A' && ch <= 'F':
			r = r<<4 | rune(ch-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// digits reads the JSON integer at the cursor (a minus, where neg is
// allowed, then 0 or a digit run with no leading zero) as a sign and a
// magnitude; false for anything else, or a magnitude over max.
func (c *Cursor) digits(neg bool, max uint64) (minus bool, n uint64, ok bool) {
	j := c.I
	if neg && j < len(c.B) && c.B[j] == '-' {
		minus = true
		j++
	}
	d := j
	for ; j < len(c.B) && c.B[j] >= '0' && c.B[j] <= '9'; j++ {
		v := uint64(c.B[j] - '0')
		if n > (max-v)/10 {
			return false, 0, false
		}
		n = n*10 + v
	}
	if j == d || (c.B[d] == '0' && j-d > 1) {
		return false, 0, false
	}
	if j < len(c.B) && (c.B[j] == '.' || c.B[j] == 'e' || c.B[j] == 'E') {
		return false, 0, false // not an integer: encoding/json decides
	}
	c.I = j
	return minus, n, true
}

// Int reads an int; one out of range gives up, as encoding/json refuses it.
func (c *Cursor) Int(dst *int) bool {
	minus, n, ok := c.digits(true, math.MaxInt+1)
	if !ok || (!minus && n > math.MaxInt) {
		return false
	}
	if minus {
		*dst = int(-n) // two's complement: -(MaxInt+1) is MinInt
	} else {
		*dst = int(n)
	}
	return true
}

// Uint reads a uint64.
func (c *Cursor) Uint(dst *uint64) bool {
	_, n, ok := c.digits(false, math.MaxUint64)
	if ok {
		*dst = n
	}
	return ok
}

// Bool reads true or false.
func (c *Cursor) Bool(dst *bool) bool {
	switch {
	case c.Lit("true"):
		*dst = true
	case c.Lit("false"):
		*dst = false
	default:
		return false
	}
	return true
}

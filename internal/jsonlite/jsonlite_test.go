package jsonlite

import (
	"encoding/json"
	"testing"
)

var strSamples = []string{
	`""`, `"plain"`, `"\u003c|user|\u003e\nhello"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u2028\u0000\uFFFF"`, `"é✓😀"`,
	`"\ud83d\ude00"`, `"\ud800"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", "\"\xff\"", `"unterminated`, `"a\"`,
	`"\\"`, `"\\\""`, `x`, ``, `"\u`, `"\`,
}

// checkStr holds Str to encoding/json: where Str reads a string it reads
// what json does, up to the string's closing quote.
func checkStr(t *testing.T, in []byte) {
	t.Helper()
	c := Cursor{B: in}
	var got string
	if !c.Str(&got) {
		return
	}
	var want string
	if err := json.Unmarshal(in[:c.I], &want); err != nil {
		t.Fatalf("Str read %q from %q, which json refuses: %v", got, in[:c.I], err)
	}
	if got != want {
		t.Fatalf("Str read %q from %q, json reads %q", got, in[:c.I], want)
	}
}

func TestStrAsJSON(t *testing.T) {
	t.Parallel()
	read := 0
	for _, s := range strSamples {
		checkStr(t, []byte(s))
		c := Cursor{B: []byte(s)}
		var v string
		if c.Str(&v) {
			read++
		}
	}
	if read < 8 {
		t.Errorf("Str read only %d samples", read)
	}
}

func FuzzStr(f *testing.F) {
	for _, s := range strSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkStr(t, in) })
}

// checkNum holds Int, Uint and Bool to encoding/json on the same bytes.
func checkNum(t *testing.T, in []byte) {
	t.Helper()
	var i int
	if c := (Cursor{B: in}); c.Int(&i) && c.End() {
		var want int
		if err := json.Unmarshal(in, &want); err != nil || want != i {
			t.Fatalf("Int read %d from %q, json reads %d (%v)", i, in, want, err)
		}
	}
	var u uint64
	if c := (Cursor{B: in}); c.Uint(&u) && c.End() {
		var want uint64
		if err := json.Unmarshal(in, &want); err != nil || want != u {
			t.Fatalf("Uint read %d from %q, json reads %d (%v)", u, in, want, err)
		}
	}
	var b bool
	if c := (Cursor{B: in}); c.Bool(&b) && c.End() {
		var want bool
		if err := json.Unmarshal(in, &want); err != nil || want != b {
			t.Fatalf("Bool read %v from %q, json reads %v (%v)", b, in, want, err)
		}
	}
}

func FuzzNum(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "-12", "01", "1.5", "1e3", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "18446744073709551615", "18446744073709551616", "-", "", "true", "false", "tru"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkNum(t, in) })
}

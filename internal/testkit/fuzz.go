package testkit

import (
	"encoding/binary"
	"runtime"
)

// AllocatedBy returns the bytes the heap handed out while fn ran, so a fuzz
// target can assert that a parser's memory stays within its documented
// limit for the input it was given. Run it with nothing else allocating
// (fuzz targets and sequential tests): other goroutines' allocations count
// too, so assertions need slack.
func AllocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// SplitFrames decodes a multipart message from one fuzz input: frames are
// uvarint length-prefixed, and a bad or too large length makes the rest of
// the input the last frame. Every input is some message, so the fuzzer
// never wastes an execution on an undecodable one.
func SplitFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			out = append(out, b)
			break
		}
		out = append(out, b[k:k+int(n)])
		b = b[k+int(n):]
	}
	return out
}

// JoinFrames is the inverse of SplitFrames, for seeding a fuzz corpus with
// real layouts.
func JoinFrames(frames [][]byte) []byte {
	var out []byte
	for _, f := range frames {
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

package contract

import (
	"strings"
	"testing"
	"time"
)

// The wire dialect defaults to NIXL and a bad one is refused naming the
// field and the valid values.
func TestConfigWire(t *testing.T) {
	t.Parallel()
	c, _, err := EngineConfig{}.Resolve()
	if err != nil || c.Wire != WireNIXL {
		t.Fatalf("default wire %q (%v), want nixl", c.Wire, err)
	}
	c, _, err = EngineConfig{Wire: WireMooncake}.Resolve()
	if err != nil || c.Wire != WireMooncake {
		t.Fatalf("wire %q (%v), want mooncake", c.Wire, err)
	}
	_, _, err = EngineConfig{Wire: "ucx"}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "wire") || !strings.Contains(err.Error(), "nixl, mooncake") {
		t.Fatalf("wire ucx: %v, want an error naming the field and the valid dialects", err)
	}
}

// kv_posted_writes defaults to one write at a time and is bounded.
func TestConfigPostedWrites(t *testing.T) {
	t.Parallel()
	c, _, err := EngineConfig{}.Resolve()
	if err != nil || c.KVPostedWrites != 1 {
		t.Fatalf("default kv_posted_writes %d (%v), want 1", c.KVPostedWrites, err)
	}
	for _, n := range []int{-1, MaxKVPostedWrites + 1} {
		if _, _, err := (EngineConfig{KVPostedWrites: n}).Resolve(); err == nil || !strings.Contains(err.Error(), "kv_posted_writes") {
			t.Fatalf("kv_posted_writes %d: %v, want an error naming the field", n, err)
		}
	}
	if c, _, err := (EngineConfig{KVPostedWrites: 4}).Resolve(); err != nil || c.KVPostedWrites != 4 {
		t.Fatalf("kv_posted_writes 4: %d, %v", c.KVPostedWrites, err)
	}
}

// push_queue_len defaults to DefaultPushQueueLen (8192, the engine's queue
// before it was a setting), is bounded and refuses negatives, naming the
// field.
func TestConfigPushQueueLen(t *testing.T) {
	t.Parallel()
	c, _, err := EngineConfig{}.Resolve()
	if err != nil || c.PushQueueLen != DefaultPushQueueLen || DefaultPushQueueLen != 8192 {
		t.Fatalf("default push_queue_len %d (%v), want 8192", c.PushQueueLen, err)
	}
	for _, n := range []int{-1, MaxPushQueueLen + 1} {
		if _, _, err := (EngineConfig{PushQueueLen: n}).Resolve(); err == nil || !strings.Contains(err.Error(), "push_queue_len") {
			t.Fatalf("push_queue_len %d: %v, want an error naming the field", n, err)
		}
	}
	for _, n := range []int{1, 4, MaxPushQueueLen} {
		if c, _, err := (EngineConfig{PushQueueLen: n}).Resolve(); err != nil || c.PushQueueLen != n {
			t.Fatalf("push_queue_len %d: %d, %v", n, c.PushQueueLen, err)
		}
	}
}

// kv_write_latency defaults to writes that land at once and must not be
// negative.
func TestConfigWriteLatency(t *testing.T) {
	t.Parallel()
	if c, _, err := (EngineConfig{}).Resolve(); err != nil || c.KVWriteLatency != 0 {
		t.Fatalf("default kv_write_latency %v (%v), want 0", c.KVWriteLatency, err)
	}
	if _, _, err := (EngineConfig{KVWriteLatency: -time.Millisecond}).Resolve(); err == nil || !strings.Contains(err.Error(), "kv_write_latency") {
		t.Fatalf("kv_write_latency -1ms: %v, want an error naming the field", err)
	}
}

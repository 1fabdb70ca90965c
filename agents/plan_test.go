package agents

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/agents/outcome"
)

func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	o, err := Preset(PresetOpenCode30)
	if err != nil {
		t.Fatal(err)
	}
	for agent := range 3 {
		for inc := range 2 {
			i1, d1 := Plan(1, o, agent, inc, 200)
			i2, d2 := Plan(1, o, agent, inc, 200)
			if !reflect.DeepEqual(i1, i2) || !reflect.DeepEqual(d1, d2) {
				t.Fatalf("agent %d inc %d: same seed, different plans", agent, inc)
			}
			i3, d3 := Plan(2, o, agent, inc, 200)
			if reflect.DeepEqual(i1, i3) || reflect.DeepEqual(d1, d3) {
				t.Fatalf("agent %d inc %d: seeds 1 and 2 give the same plan", agent, inc)
			}
		}
	}
	_, a := Plan(1, o, 0, 0, 50)
	_, b := Plan(1, o, 1, 0, 50)
	if reflect.DeepEqual(a, b) {
		t.Fatal("two agents share one decision stream")
	}
	// Plans cover every kind of decision the preset asks for.
	_, ds := Plan(1, o, 0, 0, 2000)
	kinds := map[outcome.CancelKind]int{}
	subs := 0
	for _, d := range ds {
		kinds[d.Cancel]++
		if d.Sub > 0 {
			subs++
		}
		if d.Cancel == outcome.CancelDecode && (d.CancelAfter < 1 || d.CancelAfter >= d.MaxTokens) {
			t.Fatalf("decode cancel outside the answer: %+v", d)
		}
	}
	if len(kinds) != 4 || subs == 0 {
		t.Fatalf("want every cancel kind and sub-requests, got %v and %d subs", kinds, subs)
	}

	b80, _ := Preset(PresetBurst80)
	k1, k2 := KillAllTimes(5, b80, 4), KillAllTimes(5, b80, 4)
	if !reflect.DeepEqual(k1, k2) || len(k1) != 4 || k1[0] != 5*time.Second {
		t.Fatalf("kill-all schedule: %v vs %v", k1, k2)
	}
	if reflect.DeepEqual(k1, KillAllTimes(6, b80, 4)) {
		t.Fatal("kill-all schedule ignores the seed")
	}
	if SystemPrompt(1, 3000) != SystemPrompt(1, 3000) || SystemPrompt(1, 100) == SystemPrompt(2, 100) {
		t.Fatal("system prompt is not a function of the seed")
	}
	if n := len(strings.Fields(SystemPrompt(1, 3000))); n < 3000 {
		t.Fatalf("system prompt has %d words", n)
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, name := range PresetNames() {
		o, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.WithDefaults().Validate(); err != nil {
			t.Fatalf("preset %s: %v", name, err)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Fatal("unknown preset accepted")
	}
	for _, tc := range []struct {
		name  string
		o     Options
		field string // "" means valid
	}{
		{"zero value is valid", Options{}, ""},
		{"negative agents", Options{Agents: -1}, "agents"},
		{"rate above one", Options{CancelDecodeRate: 1.5}, "cancel_decode_rate"},
		{"rates sum above one", Options{CancelDecodeRate: 0.6, CancelQueuedRate: 0.6}, "cancel_queued_rate"},
		{"deadline rate without deadline", Options{DeadlineRate: 0.1}, "deadline"},
		{"negative think", Options{ThinkTime: -time.Second}, "think_time"},
		{"negative kill-all", Options{KillAllAt: []time.Duration{-1}}, "kill_all_at[0]"},
		{"decode cancel of one token", Options{MaxTokens: 1, CancelDecodeRate: 0.1}, "max_tokens"},
		{"retry rate above one", Options{CancelQueuedRate: 0.1, RetrySameRidRate: 2}, "retry_same_rid_rate"},
		{"retries with no queued cancels", Options{CancelDecodeRate: 0.1, RetrySameRidRate: 0.5}, "retry_same_rid_rate"},
		{"room retries with no queued cancels", Options{CancelDecodeRate: 0.1, RetrySameRoomRate: 0.5}, "retry_same_room_rate"},
		{"abort_request rate above one", Options{CancelDecodeRate: 0.1, AbortRequestRate: 1.5}, "abort_request_rate"},
		{"negative retry delay", Options{CancelQueuedRate: 0.1, RetrySameRidRate: 0.5, RetryDelay: -time.Second}, "retry_delay"},
		{"retry delay with no retries", Options{CancelQueuedRate: 0.1, RetryDelay: time.Second}, "retry_delay"},
		{"retry delay with room retries", Options{CancelQueuedRate: 0.1, RetrySameRoomRate: 0.5, RetryDelay: time.Second}, ""},
		{"abort_requests with no cancels", Options{DeadlineRate: 0.1, Deadline: time.Second, AbortRequestRate: 0.5}, "abort_request_rate"},
	} {
		err := tc.o.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), "option "+tc.field+":")):
			t.Errorf("%s: error %v does not name %s", tc.name, err, tc.field)
		}
	}
	o, _ := Preset(PresetBurst80)
	sc := o.Scaled(0.1)
	if sc.KillAllAt[0] != 500*time.Millisecond || o.KillAllAt[0] != 5*time.Second {
		t.Fatalf("Scaled: %v (original now %v)", sc.KillAllAt, o.KillAllAt)
	}
}

func TestConvoBounded(t *testing.T) {
	t.Parallel()
	sys := newEntry("system", "s", 1, false)
	c := convo{system: &sys, max: 100}
	c.add(newEntry("user", "u", 10, false))
	for range 50 {
		c.add(newEntry("user", "tool", 30, true))
		c.add(newEntry("assistant", "a", 5, false))
	}
	if c.words > 100 || c.entries[0].msg.Content != "u" {
		t.Fatalf("context not bounded or first prompt dropped: %d words, first %q", c.words, c.entries[0].msg.Content)
	}
	if msgs := c.messages(); msgs[0].Role != "system" || len(msgs) != 1+len(c.entries) {
		t.Fatalf("messages: %+v", msgs)
	}
}

// Cancels by abort_request are drawn only when asked for, only for queued
// and decode cancels that are not retried, each with a fixed-width rid no
// other rid starts with (SGLang aborts every rid with the given prefix).
func TestPlanAbortRequest(t *testing.T) {
	t.Parallel()
	o, err := Preset(PresetOpenCode30)
	if err != nil {
		t.Fatal(err)
	}
	_, plain := Plan(3, o, 0, 0, 300)
	for _, d := range plain {
		if d.AbortRequest || d.Rid != "" {
			t.Fatalf("abort_request or rid drawn with abort_request_rate 0: %+v", d)
		}
	}
	o.AbortRequestRate = 0.5
	_, ds := Plan(3, o, 0, 0, 300)
	var rids []string
	for _, d := range ds {
		if !d.AbortRequest {
			continue
		}
		if d.Cancel != outcome.CancelQueued && d.Cancel != outcome.CancelDecode || d.Retry || len(d.Rid) != len("pdchaos-abort-")+16 {
			t.Fatalf("abort_request on %+v", d)
		}
		rids = append(rids, d.Rid)
	}
	if len(rids) == 0 {
		t.Fatal("no abort_request drawn at rate 0.5")
	}
	for _, a := range rids {
		for _, b := range rids {
			if a != b && strings.HasPrefix(b, a) {
				t.Fatalf("rid %q is a prefix of %q", a, b)
			}
		}
	}
}

// Retries are drawn only when asked for: a preset without them draws what
// it drew before (no rid, no retry), and with them only queued cancels are
// retried, each with a rid of its own.
func TestPlanRetrySameRid(t *testing.T) {
	t.Parallel()
	o, err := Preset(PresetOpenCode30)
	if err != nil {
		t.Fatal(err)
	}
	_, plain := Plan(1, o, 0, 0, 500)
	for _, d := range plain {
		if d.Rid != "" || d.Retry {
			t.Fatalf("rid or retry drawn with retry_same_rid_rate 0: %+v", d)
		}
	}
	o.CancelQueuedRate, o.RetrySameRidRate = 0.5, 0.5
	_, ds := Plan(1, o, 0, 0, 500)
	retries, rids := 0, map[string]bool{}
	for _, d := range ds {
		if !d.Retry {
			if d.Rid != "" {
				t.Fatalf("a rid on a request not retried: %+v", d)
			}
			continue
		}
		retries++
		if d.Cancel != outcome.CancelQueued || !strings.HasPrefix(d.Rid, "pdchaos-") || rids[d.Rid] {
			t.Fatalf("retry on %q with rid %q (seen before: %v)", d.Cancel, d.Rid, rids[d.Rid])
		}
		rids[d.Rid] = true
	}
	if retries < 50 {
		t.Fatalf("%d retries in 500 decisions at rates 0.5 x 0.5", retries)
	}
}

// Room retries: only queued cancels not retried by rid, each with a room
// of its own (never 0) and two distinct rids, so the copy reaches the
// engines' room check, not their rid check.
func TestPlanRetrySameRoom(t *testing.T) {
	t.Parallel()
	o, err := Preset(PresetOpenCode30)
	if err != nil {
		t.Fatal(err)
	}
	o.CancelQueuedRate, o.RetrySameRoomRate = 0.5, 0.5
	_, ds := Plan(1, o, 0, 0, 500)
	retries, rooms := 0, map[uint64]bool{}
	for _, d := range ds {
		if !d.Retry {
			if d.Room != 0 || d.RetryRid != "" {
				t.Fatalf("a room on a request not retried: %+v", d)
			}
			continue
		}
		retries++
		if d.Cancel != outcome.CancelQueued || d.Room == 0 || rooms[d.Room] || d.Rid == "" || d.RetryRid == "" || d.Rid == d.RetryRid {
			t.Fatalf("room retry %+v (room seen before: %v)", d, rooms[d.Room])
		}
		rooms[d.Room] = true
	}
	if retries < 50 {
		t.Fatalf("%d room retries in 500 decisions at rates 0.5 x 0.5", retries)
	}
}

// A retry delay is drawn for retried requests only, within [0, RetryDelay],
// and not the same for all of them; scaling a run scales it.
func TestPlanRetryDelay(t *testing.T) {
	t.Parallel()
	o, err := Preset(PresetOpenCode30)
	if err != nil {
		t.Fatal(err)
	}
	o.CancelQueuedRate, o.RetrySameRidRate, o.RetryDelay = 0.5, 0.5, 4*time.Second
	_, ds := Plan(1, o, 0, 0, 500)
	delays := map[time.Duration]bool{}
	for _, d := range ds {
		switch {
		case !d.Retry && d.RetryDelay != 0:
			t.Fatalf("a retry delay on a request not retried: %+v", d)
		case d.Retry && (d.RetryDelay < 0 || d.RetryDelay > o.RetryDelay):
			t.Fatalf("retry delay %v outside [0, %v]", d.RetryDelay, o.RetryDelay)
		case d.Retry:
			delays[d.RetryDelay] = true
		}
	}
	if len(delays) < 10 {
		t.Fatalf("%d distinct retry delays in 500 decisions, want them drawn", len(delays))
	}
	if got := o.Scaled(0.5).RetryDelay; got != 2*time.Second {
		t.Errorf("scaled by 0.5: retry delay %v, want 2s", got)
	}
}

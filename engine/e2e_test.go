package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
	"github.com/pdchaos/pdchaos/sse"
)

func prompt(i int) []model.Message {
	return []model.Message{
		{Role: "system", Content: strings.Repeat("You are a coding agent working in a large repository. ", 20)},
		{Role: "user", Content: fmt.Sprintf("task %d: refactor module %d and run the tests", i, i*7)},
	}
}

func TestConcurrentRequestsAllCorrect(t *testing.T) {
	testkit.NoLeaks(t)
	// Every answer must be exact; none may end on a deadline. 200 requests
	// at once queue behind each other's prefill, which on a loaded 2-core
	// box under the race detector took longer than the 10 s defaults
	// (decode's "timed out waiting for kv transfer"): the deadlines here
	// are far past any queueing, so only a lost room would reach them.
	long := 2 * time.Minute
	c := testcluster.Start(t, contract.EngineConfig{BootstrapTimeout: long, InflightTimeout: long, WaitingTimeout: long})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	failed := make(chan uint64, n)
	for i := range n {
		wg.Go(func() {
			msgs := prompt(i)
			r := testkit.Chat(t.Context(), c.Endpoint(), msgs, 12)
			if r.Err != nil {
				errs <- fmt.Errorf("request %d: %w", i, r.Err)
				failed <- r.Room
				return
			}
			if want := model.ExpectedChat(msgs, 12); r.Text != want {
				errs <- fmt.Errorf("request %d: got %q want %q", i, r.Text, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	close(failed)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		logRoomHistories(t, c.EngineURLs(), failed)
	}
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
}

// logRoomHistories logs the first few failed rooms' histories on every
// engine and the probes hit there: a room lost under load (a deadline
// fired long after any queueing) is a bug to chase, and these are its
// evidence.
func logRoomHistories(t *testing.T, engines []string, rooms <-chan uint64) {
	t.Helper()
	k := 0
	for room := range rooms {
		if k++; k > 3 {
			break
		}
		for _, base := range engines {
			rec, held, err := testkit.RoomOn(t.Context(), base, room)
			if err != nil {
				t.Logf("room %d on %s: %v", room, base, err)
				continue
			}
			t.Logf("room %d on %s (%s, held %v):", room, base, rec.Side, held)
			for _, ev := range rec.Events {
				t.Logf("  %s rank %d %s %s %s", ev.At.Format("15:04:05.000"), ev.Rank, ev.Kind, ev.State, ev.Detail)
			}
		}
	}
	for _, base := range engines {
		pr, err := testkit.Probes(t.Context(), base)
		if err != nil {
			continue
		}
		var hit []string
		for _, p := range pr.Probes {
			if p.Hits > 0 {
				hit = append(hit, fmt.Sprintf("%s=%d", p.Name, p.Hits))
			}
		}
		t.Logf("probes hit on %s (%s): %s", base, pr.Role, strings.Join(hit, " "))
	}
}

// streamThenCancel starts a streamed chat, reads until it has seen
// afterTokens content deltas (0: until the response headers), then goes
// away. It returns the bootstrap room the router chose.
func streamThenCancel(t *testing.T, endpoint string, msgs []model.Message, maxTokens, afterTokens int) uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	body, _ := json.Marshal(map[string]any{"model": "pdchaos-fake", "messages": msgs, "max_tokens": maxTokens, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/chat/completions", bytes.NewReader(body))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	defer resp.Body.Close()
	room, err := strconv.ParseUint(resp.Header.Get(contract.RoomHeader), 10, 64)
	if err != nil {
		t.Fatalf("router did not report the room: %v", err)
	}
	events := sse.NewReader(resp.Body, 0)
	seen := 0
	for seen < afterTokens {
		data, err := events.Next()
		if err != nil {
			break
		}
		if bytes.Contains(data, []byte(`"content":"`)) && !bytes.Contains(data, []byte(`"content":""`)) {
			seen++
		}
	}
	if seen < afterTokens {
		t.Fatalf("stream ended after %d tokens, before the cancel point %d", seen, afterTokens)
	}
	return room
}

// forwardFor is a prompt whose forward pass takes about d at the given
// prefill speed, so that a test can act while prefill still holds its room
// however loaded the machine is.
func forwardFor(i int, d time.Duration, tokensPerSec float64) []model.Message {
	words := int(d.Seconds() * tokensPerSec)
	return []model.Message{{Role: "user", Content: fmt.Sprintf("task %d:%s", i, strings.Repeat(" word", words))}}
}

// cancelDuringPrefill starts a streamed chat and goes away once both prefill
// and decode hold its room (before any byte came back), returning that
// room. The prompt must keep prefill forwarding for longer than that wait
// (see forwardFor): a cancel that lands before decode has the request, or
// after prefill sent the KV, is another scenario.
func cancelDuringPrefill(t *testing.T, c *engine.Cluster, msgs []model.Message) uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = testkit.Chat(ctx, c.Endpoint(), msgs, 50)
	}()
	var room uint64
	testkit.Eventually(t, 10*time.Second, func() error {
		r, err := testkit.Rooms(t.Context(), c.EngineURLs()[0])
		if err != nil {
			return err
		}
		if len(r.Held) == 0 {
			return fmt.Errorf("prefill holds no room yet")
		}
		room = r.Held[0].Room
		if _, held, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], room); err != nil || !held {
			return fmt.Errorf("decode does not hold room %d yet (%v)", room, err)
		}
		return nil
	})
	cancel()
	<-done
	return room
}

func findRoom(recs []contract.RoomRecord, room uint64) (contract.RoomRecord, bool) {
	for _, r := range recs {
		if r.Room == room {
			return r, true
		}
	}
	return contract.RoomRecord{}, false
}

func failedThenCleared(r contract.RoomRecord) error {
	if !r.Cleared {
		return fmt.Errorf("room %d not cleared (state %s)", r.Room, r.State)
	}
	i := slices.IndexFunc(r.Events, func(e contract.Event) bool { return e.Kind == "status" && e.State == "Failed" })
	j := slices.IndexFunc(r.Events, func(e contract.Event) bool { return e.Kind == "clear" })
	if i < 0 || j < i {
		return fmt.Errorf("room %d on %s: want Failed then cleared, events %+v", r.Room, r.Side, r.Events)
	}
	return nil
}

func TestClientDisconnectClearsBothSides(t *testing.T) {
	testkit.NoLeaks(t)
	cases := []struct {
		name        string
		cfg         contract.EngineConfig
		afterTokens int
		prefill     string // final state expected on prefill
	}{
		// Client gives up while prefill is still forwarding: both rooms fail.
		{"during-prefill", contract.EngineConfig{PrefillTokensPerSec: 100}, 0, "Failed"},
		// Client gives up mid-decode: prefill's transfer already succeeded.
		{"during-decode", contract.EngineConfig{DecodeTokensPerSec: 50}, 3, "Success"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.Start(t, tc.cfg)
			var room uint64
			if tc.prefill == "Failed" {
				room = cancelDuringPrefill(t, c, forwardFor(1, 3*time.Second, tc.cfg.PrefillTokensPerSec))
			} else {
				room = streamThenCancel(t, c.Endpoint(), prompt(1), 200, tc.afterTokens)
			}
			testkit.Eventually(t, 10*time.Second, func() error {
				for _, base := range c.EngineURLs() {
					var r contract.RoomsResponse
					if err := testkit.GetJSON(t.Context(), base+contract.PathDebugRooms, &r); err != nil {
						return err
					}
					rec, ok := findRoom(r.Cleared, room)
					if !ok {
						return fmt.Errorf("room %d not yet cleared on %s", room, r.Role)
					}
					if r.Role == "decode" || tc.prefill == "Failed" {
						if err := failedThenCleared(rec); err != nil {
							return err
						}
					} else if rec.LastState != tc.prefill {
						return fmt.Errorf("prefill room ended %s, want %s", rec.LastState, tc.prefill)
					}
				}
				return testkit.Drained(t.Context(), c)
			})
		})
	}
}

func TestMetricsUseSGLangNamesAndLabels(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{TP: 2})
	names := []string{contract.MetricPrefillBootstrapQueue, contract.MetricPrefillInflightQueue, contract.MetricDecodePreallocQueue,
		contract.MetricDecodeTransferQueue, contract.MetricRunning, contract.MetricQueue, contract.MetricTokenUsage,
		contract.MetricBootstrapFailed, contract.MetricTransferFailed}
	for i, u := range c.MetricsURLs() {
		fams, err := testkit.Scrape(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			f, ok := fams[n]
			if !ok {
				t.Errorf("%s: metric %s missing", u, n)
				continue
			}
			if len(f.GetMetric()) != 2 {
				t.Errorf("%s: %s has %d series, want one per tp rank (2)", u, n, len(f.GetMetric()))
			}
			for _, m := range f.GetMetric() {
				var got []string
				lbl := map[string]string{}
				for _, l := range m.GetLabel() {
					got = append(got, l.GetName())
					lbl[l.GetName()] = l.GetValue()
				}
				slices.Sort(got)
				if want := []string{"engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"}; !slices.Equal(got, want) {
					t.Errorf("%s %s labels %v, want %v", u, n, got, want)
				}
				if want := []string{"prefill", "decode"}[i]; lbl["engine_type"] != want {
					t.Errorf("%s %s engine_type %q, want %q", u, n, lbl["engine_type"], want)
				}
			}
		}
	}
}

// TestDecodeExportsPageAccounting: decode exports its page accounting per
// TP rank under the contract's names, and an idle pool adds up.
func TestDecodeExportsPageAccounting(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{TP: 2})
	fams, err := testkit.Scrape(t.Context(), c.MetricsURLs()[1])
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]map[string]float64{}
	for _, n := range contract.PageGauges() {
		f, ok := fams[n]
		if !ok {
			t.Fatalf("decode exports no %s", n)
		}
		per[n] = map[string]float64{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == contract.LabelTPRank {
					per[n][l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	for _, rank := range []string{"0", "1"} {
		used, free, total := per[contract.MetricPagesUsed][rank], per[contract.MetricPagesFree][rank], per[contract.MetricPagesTotal][rank]
		if total == 0 || used != 0 || used+free != total || per[contract.MetricPagesOwnedTwice][rank] != 0 {
			t.Errorf("tp_rank %s: used %g free %g total %g owned twice %g", rank, used, free, total, per[contract.MetricPagesOwnedTwice][rank])
		}
	}
}

// TestEnginesExportTables: both roles export every table gauge per TP rank
// (the history's two on tp_rank 0 only), and after requests, one of them
// cancelled mid-stream, every table that is not time-bounded is back to 0
// and nothing is overdue.
func TestEnginesExportTables(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{TP: 2})
	for i := range 3 {
		if r := testkit.Chat(t.Context(), c.Endpoint(), prompt(i), 8); r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
	}
	_ = streamThenCancel(t, c.Endpoint(), prompt(9), 200, 2)
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
	history := map[string]bool{contract.MetricTableRecords: true, contract.MetricTableOrphanRecords: true}
	for _, u := range c.MetricsURLs() {
		testkit.Eventually(t, 10*time.Second, func() error {
			fams, err := testkit.Scrape(t.Context(), u)
			if err != nil {
				return err
			}
			for _, n := range append(append(append(contract.TableGauges(), contract.OverdueGauges()...), contract.TimeBoundedGauges()...), contract.MetricTransferWorkersBusy) {
				f, ok := fams[n]
				if !ok {
					return fmt.Errorf("%s exports no %s", u, n)
				}
				if want := map[bool]int{true: 1, false: 2}[history[n]]; len(f.GetMetric()) != want {
					return fmt.Errorf("%s: %s has %d series, want %d", u, n, len(f.GetMetric()), want)
				}
				if slices.Contains(contract.TimeBoundedGauges(), n) {
					continue
				}
				for _, m := range f.GetMetric() {
					if v := m.GetGauge().GetValue(); v != 0 {
						return fmt.Errorf("%s: %s = %g after the drain", u, n, v)
					}
				}
			}
			return nil
		})
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	testkit.NoLeaks(t)
	c, err := engine.StartCluster(t.Context(), contract.EngineConfig{TP: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := testkit.Chat(t.Context(), c.Endpoint(), prompt(0), 4).Err; err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, l := range c.Links() {
		addrs = append(addrs, l.Addr)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after Close", a)
		}
	}
}

func TestDecodeHeartbeatFailsRoomsOfADeadPrefill(t *testing.T) {
	testkit.NoLeaks(t)
	// A waiting timeout far beyond the test: only the heartbeat can free
	// decode's slot in time.
	c := testcluster.Start(t, contract.EngineConfig{WaitingTimeout: time.Minute, HeartbeatInterval: 100 * time.Millisecond})
	h := hooksOf(t, c)
	must(t, h.Pause(t.Context(), allWorkers))
	answer := make(chan error, 1)
	testkit.Background(t, func(ctx context.Context) {
		_, err := testkit.Generate(ctx, c.Endpoint(), "hb-1", 8008, longPrompt("h"), 4)
		answer <- err
	})
	testkit.Eventually(t, 10*time.Second, func() error {
		return testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 1)
	})
	must(t, c.Prefill.Close(t.Context()))
	testkit.Eventually(t, 10*time.Second, func() error {
		rec, held, err := testkit.RoomOn(t.Context(), c.EngineURLs()[1], 8008)
		if err != nil || held {
			return fmt.Errorf("decode still holds the room (%v)", err)
		}
		if !slices.ContainsFunc(rec.Events, func(e contract.Event) bool { return strings.Contains(e.Detail, "lost connection with prefill") }) {
			return fmt.Errorf("room did not fail through the heartbeat: %+v", rec.Events)
		}
		return testkit.GaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 0)
	})
	select {
	case err := <-answer:
		if err == nil {
			t.Fatal("request succeeded without its prefill")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client still waiting after decode failed the room")
	}
}

// With kv_write_latency every KV write is on the wire that long: answers
// stay exact, a request takes at least that long, and everything drains.
func TestKVWriteLatencyKeepsAnswersExact(t *testing.T) {
	testkit.NoLeaks(t)
	const lat = 30 * time.Millisecond
	c := testcluster.Start(t, contract.EngineConfig{KVWriteLatency: lat})
	for i := range 4 {
		msgs := prompt(i)
		start := time.Now()
		r := testkit.Chat(t.Context(), c.Endpoint(), msgs, 4)
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		if want := model.ExpectedChat(msgs, 4); r.Text != want {
			t.Fatalf("request %d: got %q want %q", i, r.Text, want)
		}
		if d := time.Since(start); d < lat {
			t.Errorf("request %d took %v, less than one write's %v on the wire", i, d, lat)
		}
	}
	testkit.Eventually(t, 10*time.Second, func() error { return testkit.Drained(t.Context(), c) })
}

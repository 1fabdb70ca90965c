package engine_test

import (
	"bufio"
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
)

func prompt(i int) []model.Message {
	return []model.Message{
		{Role: "system", Content: strings.Repeat("You are a coding agent working in a large repository. ", 20)},
		{Role: "user", Content: fmt.Sprintf("task %d: refactor module %d and run the tests", i, i*7)},
	}
}

func TestConcurrentRequestsAllCorrect(t *testing.T) {
	noLeaks(t)
	c := startCluster(t, engine.Config{})
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			msgs := prompt(i)
			got, err := chat(t.Context(), client, c.Endpoint(), msgs, 12)
			if err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			if want := model.ExpectedChat(msgs, 12); got != want {
				errs <- fmt.Errorf("request %d: got %q want %q", i, got, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	eventually(t, 10*time.Second, func() error { return drained(t.Context(), c) })
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
	sc := bufio.NewScanner(resp.Body)
	seen := 0
	for seen < afterTokens && sc.Scan() {
		if strings.Contains(sc.Text(), `"content":"`) && !strings.Contains(sc.Text(), `"content":""`) {
			seen++
		}
	}
	if seen < afterTokens {
		t.Fatalf("stream ended after %d tokens, before the cancel point %d", seen, afterTokens)
	}
	return room
}

// cancelDuringPrefill starts a streamed chat and goes away while prefill
// holds its room (before any byte came back), returning that room.
func cancelDuringPrefill(t *testing.T, c *engine.Cluster, msgs []model.Message) uint64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = chat(ctx, &http.Client{Transport: tr}, c.Endpoint(), msgs, 50)
	}()
	var room uint64
	eventually(t, 10*time.Second, func() error {
		r := rooms(t, c.EngineURLs()[0])
		if len(r.Held) == 0 {
			return fmt.Errorf("prefill holds no room yet")
		}
		room = r.Held[0].Room
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
	noLeaks(t)
	cases := []struct {
		name        string
		cfg         engine.Config
		afterTokens int
		prefill     string // final state expected on prefill
	}{
		// Client gives up while prefill is still forwarding: both rooms fail.
		{"during-prefill", engine.Config{PrefillTokensPerSec: 100}, 0, "Failed"},
		// Client gives up mid-decode: prefill's transfer already succeeded.
		{"during-decode", engine.Config{DecodeTokensPerSec: 50}, 3, "Success"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, tc.cfg)
			var room uint64
			if tc.prefill == "Failed" {
				room = cancelDuringPrefill(t, c, prompt(1))
			} else {
				room = streamThenCancel(t, c.Endpoint(), prompt(1), 200, tc.afterTokens)
			}
			eventually(t, 10*time.Second, func() error {
				for _, base := range c.EngineURLs() {
					var r contract.RoomsResponse
					if err := getJSON(t.Context(), base+contract.PathDebugRooms, &r); err != nil {
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
				return drained(t.Context(), c)
			})
		})
	}
}

func TestMetricsUseSGLangNamesAndLabels(t *testing.T) {
	c := startCluster(t, engine.Config{TP: 2})
	names := []string{contract.MetricPrefillBootstrapQueue, contract.MetricPrefillInflightQueue, contract.MetricDecodePreallocQueue,
		contract.MetricDecodeTransferQueue, contract.MetricRunning, contract.MetricQueue, contract.MetricTokenUsage,
		contract.MetricBootstrapFailed, contract.MetricTransferFailed}
	for i, u := range c.MetricsURLs() {
		fams, err := scrape(t.Context(), u)
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

func TestCloseReleasesEverything(t *testing.T) {
	noLeaks(t)
	c, err := engine.StartCluster(t.Context(), engine.Config{TP: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	if _, err := chat(t.Context(), client, c.Endpoint(), prompt(0), 4); err != nil {
		t.Fatal(err)
	}
	client.CloseIdleConnections()
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
	noLeaks(t)
	// A waiting timeout far beyond the test: only the heartbeat can free
	// decode's slot in time.
	c := startCluster(t, engine.Config{WaitingTimeout: time.Minute, HeartbeatInterval: 100 * time.Millisecond})
	h := hooksOf(t, c)
	must(t, h.Pause(t.Context(), allWorkers))
	answer := make(chan error, 1)
	background(t, func(ctx context.Context) {
		_, err := generate(ctx, c.Endpoint(), "hb-1", 8008, longPrompt("h"), 4)
		answer <- err
	})
	eventually(t, 10*time.Second, func() error {
		return gaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 1)
	})
	must(t, c.Prefill.Close(t.Context()))
	eventually(t, 10*time.Second, func() error {
		rec, held, err := roomOn(t.Context(), c.EngineURLs()[1], 8008)
		if err != nil || held {
			return fmt.Errorf("decode still holds the room (%v)", err)
		}
		if !slices.ContainsFunc(rec.Events, func(e contract.Event) bool { return strings.Contains(e.Detail, "lost connection with prefill") }) {
			return fmt.Errorf("room did not fail through the heartbeat: %+v", rec.Events)
		}
		return gaugeIs(t.Context(), c.MetricsURLs()[1], contract.MetricDecodeTransferQueue, 0)
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

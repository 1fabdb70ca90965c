// Package clustertest starts the bundled engine for tests and talks to it
// the way a test needs to: a cluster closed when the test ends, and an
// SGLang /generate call with a chosen rid and room, so a test can aim at a
// transfer worker (room % workers) and abort one side only.
//
// It is for tests only (it imports testing); it imports engine and must not
// import faults, agents, harness, suites or Ginkgo.
package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
)

// Start runs the in-process cluster and closes it when the test ends.
func Start(t testing.TB, cfg engine.Config) *engine.Cluster {
	t.Helper()
	c, err := engine.StartCluster(t.Context(), cfg, nil)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return c
}

// Generate sends SGLang /generate through the router at endpoint with a
// chosen rid and room and returns the answer text.
func Generate(ctx context.Context, endpoint, rid string, room uint64, text string, maxTokens int) (string, error) {
	body, err := json.Marshal(contract.GenerateRequest{Rid: rid, Text: text, BootstrapRoom: &room,
		SamplingParams: contract.SamplingParams{MaxNewTokens: maxTokens}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+contract.PathGenerate, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("generate %s: status %d: %s", rid, resp.StatusCode, b)
	}
	var out contract.GenerateChunk
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("generate %s: %w", rid, err)
	}
	return out.Text, nil
}

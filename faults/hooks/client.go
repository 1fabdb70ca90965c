package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pdchaos/pdchaos/contract"
)

var _ contract.Hooks = (*HooksClient)(nil)

// HooksClient is contract.Hooks for an engine in another process, spoken to
// over its /debug/hooks endpoint, so hook faults work the same on an
// in-process cluster and on engine processes.
type HooksClient struct {
	// BaseURL is the engine's base URL, e.g. "http://127.0.0.1:30000".
	BaseURL string
	// Client sends the requests; nil means http.DefaultClient. Every call
	// is bounded by its ctx.
	Client *http.Client
}

// Pause closes the selected gates.
func (c *HooksClient) Pause(ctx context.Context, spec contract.HookSpec) error {
	return c.post(ctx, contract.HooksRequest{Action: contract.HookActionPause, Spec: spec})
}

// Resume opens the selected gates.
func (c *HooksClient) Resume(ctx context.Context, spec contract.HookSpec) error {
	return c.post(ctx, contract.HooksRequest{Action: contract.HookActionResume, Spec: spec})
}

// ResumeAll opens every gate.
func (c *HooksClient) ResumeAll(ctx context.Context) error {
	return c.post(ctx, contract.HooksRequest{Action: contract.HookActionResumeAll})
}

// State reports every gate.
func (c *HooksClient) State(ctx context.Context) ([]contract.HookState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(), nil)
	if err != nil {
		return nil, fmt.Errorf("hook state: %w", err)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("hook state: %w", err)
	}
	defer resp.Body.Close()
	if err := check(resp); err != nil {
		return nil, fmt.Errorf("hook state: %w", err)
	}
	var states []contract.HookState
	if err := json.NewDecoder(resp.Body).Decode(&states); err != nil {
		return nil, fmt.Errorf("hook state: decode: %w", err)
	}
	return states, nil
}

func (c *HooksClient) post(ctx context.Context, r contract.HooksRequest) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("hook %s %s: %w", r.Action, r.Spec, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("hook %s %s: %w", r.Action, r.Spec, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return fmt.Errorf("hook %s %s: %w", r.Action, r.Spec, err)
	}
	defer resp.Body.Close()
	if err := check(resp); err != nil {
		return fmt.Errorf("hook %s %s: %w", r.Action, r.Spec, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

// check turns a non-2xx answer into an error. It reads both error bodies in
// use ({"error":"msg"} and the engine's {"error":{"message":"msg",...}}); a
// 404, or a message naming an unknown hook, wraps contract.ErrUnknownHook.
func check(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(b))
	var eb struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &eb) == nil && len(eb.Error) > 0 {
		var s string
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(eb.Error, &s) == nil && s != "" {
			msg = s
		} else if json.Unmarshal(eb.Error, &obj) == nil && obj.Message != "" {
			msg = obj.Message
		}
	}
	if resp.StatusCode == http.StatusNotFound || strings.Contains(msg, contract.ErrUnknownHook.Error()) {
		return fmt.Errorf("%w: status %d: %s", contract.ErrUnknownHook, resp.StatusCode, msg)
	}
	return fmt.Errorf("status %d: %s", resp.StatusCode, msg)
}

func (c *HooksClient) url() string { return strings.TrimSuffix(c.BaseURL, "/") + contract.HooksPath }

func (c *HooksClient) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	return http.DefaultClient
}

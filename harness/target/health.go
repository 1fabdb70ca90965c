package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// HealthTimeout bounds one health request. SGLang's /health_generate runs
// a one-token generation and may take up to its 20 s health timeout.
const HealthTimeout = 25 * time.Second

// HealthProbe is one role's health answer and the endpoint that gave it.
type HealthProbe struct {
	// Role is "router" or the engine's base URL.
	Role string `json:"role"`
	// Path is the endpoint used: /readiness or /health on the router,
	// /health_generate or /health on an engine.
	Path string `json:"path"`
	// Status is the HTTP status; 0 when nothing answered.
	Status int `json:"status"`
	// Fallback says why the preferred endpoint was not used (it answered
	// 404); empty when it was.
	Fallback string `json:"fallback,omitempty"`
	// Err says why the role is not healthy; empty when it is.
	Err string `json:"error,omitempty"`
}

// HealthReport is one health probe of a deployment, role by role.
type HealthReport []HealthProbe

// Err is nil when every role answered 200, else one error per role that
// did not.
func (h HealthReport) Err() error {
	var errs []error
	for _, p := range h {
		if p.Err != "" {
			errs = append(errs, fmt.Errorf("health of %s (%s): %s", p.Role, p.Path, p.Err))
		}
	}
	return errors.Join(errs...)
}

// String is one line: each role with the endpoint used and its answer.
func (h HealthReport) String() string {
	parts := make([]string, 0, len(h))
	for _, p := range h {
		s := fmt.Sprintf("%s %s %d", p.Role, p.Path, p.Status)
		if p.Fallback != "" {
			s += " (" + p.Fallback + ")"
		}
		if p.Err != "" && p.Status == 0 {
			s = fmt.Sprintf("%s %s: %s", p.Role, p.Path, p.Err)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// ProbeHealth asks the router's /readiness (200 only with a healthy
// prefill and decode on SGLang's model gateway; the gateway's /health is
// liveness only) and each engine's /health_generate, falling back to
// /health where the preferred endpoint answers 404 (an older router or
// mini_lb; an engine without it). It says which endpoint it used.
func ProbeHealth(ctx context.Context, router string, engines []string) HealthReport {
	client := &http.Client{Timeout: HealthTimeout}
	defer client.CloseIdleConnections()
	out := HealthReport{probeOne(ctx, client, "router", strings.TrimRight(router, "/"), contract.PathReadiness,
		"router has no /readiness (older sgl-router or mini_lb): /health, which may be liveness only")}
	for _, e := range engines {
		e = strings.TrimRight(e, "/")
		out = append(out, probeOne(ctx, client, e, e, contract.PathHealthGenerate, "engine has no /health_generate"))
	}
	return out
}

// MaxHealthBody bounds what is read of one health answer. SGLang's health
// endpoints answer a few bytes; a body that has not ended by then (one that
// streams forever, or a GiB) is not a health answer, and reading on would
// only spend the probe's deadline.
const MaxHealthBody = 64 << 10

// probeOne GETs base+preferred, and base+/health when that is 404.
func probeOne(ctx context.Context, client *http.Client, role, base, preferred, why string) HealthProbe {
	p := HealthProbe{Role: role, Path: preferred}
	status, body, err := get(ctx, client, base+preferred)
	if err == nil && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) {
		p.Path, p.Fallback = contract.PathHealth, why
		status, body, err = get(ctx, client, base+contract.PathHealth)
	}
	p.Status = status
	switch {
	case err != nil:
		p.Err = err.Error()
	case status != http.StatusOK:
		p.Err = fmt.Sprintf("status %d", status)
		if b := strings.TrimSpace(body); b != "" {
			p.Err += ": " + b
		}
	}
	return p
}

// get GETs url and returns the status and the first 300 bytes of the body.
// The whole body must arrive, within MaxHealthBody: a body cut short (a
// reset, or a close before its Content-Length) or one that does not end is
// an error with its status, never a healthy answer.
func get(ctx context.Context, client *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", fmt.Errorf("get %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("get %s: %w", url, err)
	}
	// Closing without draining drops the connection, which is what a body
	// over the limit deserves.
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxHealthBody+1))
	switch {
	case err != nil:
		return resp.StatusCode, "", fmt.Errorf("get %s: status %d, but the body was cut after %d bytes: %w", url, resp.StatusCode, len(b), err)
	case len(b) > MaxHealthBody:
		return resp.StatusCode, "", fmt.Errorf("get %s: status %d, but the body goes on past %d bytes (a health answer is a few bytes)", url, resp.StatusCode, MaxHealthBody)
	}
	return resp.StatusCode, string(b[:min(len(b), 300)]), nil
}

// EngineBases derives each engine's base URL from its /metrics URL.
func EngineBases(t Target) []string {
	var out []string
	for _, m := range t.MetricsURLs() {
		out = append(out, strings.TrimSuffix(strings.TrimRight(m, "/"), contract.PathMetrics))
	}
	return out
}

package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

// TestProfileFlagErrors: an unknown profile lists the valid ones, a wire
// that contradicts the profile names both, and a second profile on a
// scenario that has one is refused; each is a harness error (exit 3).
func TestProfileFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"engine unknown profile", []string{"engine", "--profile", "sglang-ucx"}, []string{`unknown profile "sglang-ucx"`, "valid: sglang-nixl, sglang-mooncake"}},
		{"engine wire conflict", []string{"engine", "--profile", "sglang-mooncake", "--wire", "nixl"}, []string{"sglang-mooncake", "wire mooncake", "wire nixl"}},
		{"run unknown profile", []string{"run", "abort-storm", "--profile", "nope", "--results", t.TempDir()}, []string{`unknown profile "nope"`, "sglang-nixl"}},
		{"soak unknown profile", []string{"soak", "abort-storm", "--profile", "nope", "--results", t.TempDir()}, []string{`unknown profile "nope"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := execute(t, tc.args...)
			if code != exitHarness {
				t.Fatalf("exit %d, want %d: %s", code, exitHarness, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q does not mention %q", out, w)
				}
			}
		})
	}
}

func TestProfileList(t *testing.T) {
	code, out := execute(t, "engine", "--profile", "list")
	if code != exitPass {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, p := range contract.Profiles() {
		for _, r := range p.On {
			if !strings.Contains(out, p.Name) || !strings.Contains(out, "on  "+r.Regression+": "+r.Reason) {
				t.Errorf("list lacks %s's %s or its reason:\n%s", p.Name, r.Regression, out)
			}
		}
	}
}

// TestEngineRunsProfile: an engine started with a profile reports every
// regression of it switched on (the engine resolves the profile itself, so
// a role process given only --profile gets the same set).
func TestEngineRunsProfile(t *testing.T) {
	c := testcluster.Start(t, contract.EngineConfig{Profile: contract.ProfileSGLangMooncake, Regressions: []string{contract.DecodeAbortLeak}})
	resp, err := http.Get("http://" + c.Prefill.Addrs().HTTP + "/get_server_info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Regressions []string `json:"regressions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	want := []string{contract.AbortBeforeStatus, contract.StatusResurrection, contract.DecodeAbortLeak, contract.RankDesync, contract.FreeBeforeAck}
	if !slices.Equal(info.Regressions, want) {
		t.Fatalf("prefill serves regressions %v, want %v", info.Regressions, want)
	}
}

const (
	profBegin = "<!-- profiles: generated from contract.Profiles() by `go test ./cmd/pdchaos -run TestSGLangProfileTable -update` -->\n"
	profEnd   = "<!-- end profiles -->\n"
)

// TestSGLangProfileTable checks docs/sglang.md's profile table against
// contract.Profiles(), so a profile changed without the page following
// fails here; -update rewrites it.
func TestSGLangProfileTable(t *testing.T) {
	checkGenerated(t, "docs/sglang.md", profBegin, profEnd, profilesMarkdown()+"\n", "profile table", "TestSGLangProfileTable")
}

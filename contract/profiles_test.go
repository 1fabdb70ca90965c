package contract_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
)

// TestProfilesComplete: each profile speaks a known wire, and its On and
// Off lists cover the regression catalogue exactly once with a one-line
// reason each, so a regression added later must be decided per profile.
func TestProfilesComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range contract.Profiles() {
		if seen[p.Name] {
			t.Errorf("profile %s listed twice", p.Name)
		}
		seen[p.Name] = true
		if _, err := contract.ParseWire(string(p.Wire)); err != nil || p.Wire == "" {
			t.Errorf("profile %s: wire %q: %v", p.Name, p.Wire, err)
		}
		if p.Build == "" {
			t.Errorf("profile %s: Build must say which upstream build it stands for", p.Name)
		}
		if len(p.On) == 0 {
			t.Errorf("profile %s switches nothing on", p.Name)
		}
		decided := map[string]int{}
		for _, r := range append(slices.Clone(p.On), p.Off...) {
			decided[r.Regression]++
			if _, ok := contract.LookupRegression(r.Regression); !ok {
				t.Errorf("profile %s: %q is not in the regression catalogue", p.Name, r.Regression)
			}
			if strings.TrimSpace(r.Reason) == "" || strings.Contains(r.Reason, "\n") || strings.Contains(r.Reason, "|") {
				t.Errorf("profile %s: %s needs a one-line reason without '|' (a Markdown cell), got %q", p.Name, r.Regression, r.Reason)
			}
		}
		for _, n := range contract.RegressionNames() {
			if decided[n] != 1 {
				t.Errorf("profile %s: regression %s is listed %d times in On+Off, want exactly once", p.Name, n, decided[n])
			}
		}
		for _, u := range p.Unmodelled {
			if strings.Contains(u, "\n") || strings.Contains(u, "|") {
				t.Errorf("profile %s: unmodelled note %q must be one line without '|'", p.Name, u)
			}
		}
	}
}

// TestProfileChoices pins the decisions read from the reference, so that a
// change to the table is a deliberate one: no ABORT_ACK without deferred
// release on both backends, non-sticky Failed only on the common/Mooncake
// path, absent-room WaitingForInput only on NIXL.
func TestProfileChoices(t *testing.T) {
	for _, tc := range []struct {
		profile string
		wire    contract.Wire
		on      []string
	}{
		{contract.ProfileSGLangNIXL, contract.WireNIXL,
			[]string{contract.AbortBeforeStatus, contract.UnknownRoomWaiting, contract.RankDesync, contract.FreeBeforeAck}},
		{contract.ProfileSGLangMooncake, contract.WireMooncake,
			[]string{contract.AbortBeforeStatus, contract.StatusResurrection, contract.RankDesync, contract.FreeBeforeAck}},
	} {
		p, err := contract.LookupProfile(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		if p.Wire != tc.wire || !slices.Equal(p.Regressions(), tc.on) {
			t.Errorf("profile %s = wire %s, regressions %v; want %s, %v", tc.profile, p.Wire, p.Regressions(), tc.wire, tc.on)
		}
	}
}

func TestWithProfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      contract.EngineConfig
		wire    contract.Wire
		regs    []string
		wantErr []string
	}{
		{name: "no profile is unchanged", in: contract.EngineConfig{Regressions: []string{contract.RankDesync}},
			regs: []string{contract.RankDesync}},
		{name: "profile sets its wire and regressions", in: contract.EngineConfig{Profile: contract.ProfileSGLangMooncake},
			wire: contract.WireMooncake,
			regs: []string{contract.AbortBeforeStatus, contract.StatusResurrection, contract.RankDesync, contract.FreeBeforeAck}},
		{name: "explicit regressions merge, no duplicates",
			in:   contract.EngineConfig{Profile: contract.ProfileSGLangNIXL, Regressions: []string{contract.DecodeAbortLeak, contract.FreeBeforeAck, " "}},
			wire: contract.WireNIXL,
			regs: []string{contract.AbortBeforeStatus, contract.UnknownRoomWaiting, contract.RankDesync, contract.FreeBeforeAck, contract.DecodeAbortLeak}},
		{name: "the same wire given explicitly is fine", in: contract.EngineConfig{Profile: contract.ProfileSGLangNIXL, Wire: contract.WireNIXL},
			wire: contract.WireNIXL,
			regs: []string{contract.AbortBeforeStatus, contract.UnknownRoomWaiting, contract.RankDesync, contract.FreeBeforeAck}},
		{name: "conflicting wire names both", in: contract.EngineConfig{Profile: contract.ProfileSGLangMooncake, Wire: contract.WireNIXL},
			wantErr: []string{"sglang-mooncake", "wire mooncake", "wire nixl"}},
		{name: "unknown profile lists the valid ones", in: contract.EngineConfig{Profile: "sglang-ucx"},
			wantErr: []string{`"sglang-ucx"`, "sglang-nixl, sglang-mooncake"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.in.WithProfile()
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("WithProfile(%+v) = %+v, want an error", tc.in, got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q should contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Wire != tc.wire || !slices.Equal(got.Regressions, tc.regs) {
				t.Fatalf("WithProfile = wire %q regressions %v; want %q %v", got.Wire, got.Regressions, tc.wire, tc.regs)
			}
			again, err := got.WithProfile()
			if err != nil || again.Wire != got.Wire || !slices.Equal(again.Regressions, got.Regressions) {
				t.Fatalf("WithProfile is not idempotent: %+v, %v", again, err)
			}
		})
	}
}

// TestResolveExpandsProfile: the engine resolves its config through
// Resolve, so the profile's regressions must be on in what it returns, and
// a bad profile is an error under the profile key.
func TestResolveExpandsProfile(t *testing.T) {
	c, reg, err := contract.EngineConfig{Profile: contract.ProfileSGLangMooncake}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.Wire != contract.WireMooncake || !reg.On(contract.StatusResurrection) || reg.On(contract.UnknownRoomWaiting) {
		t.Fatalf("Resolve = wire %s, regressions %v", c.Wire, reg.List())
	}
	if _, _, err := (contract.EngineConfig{Profile: "nope"}).Resolve(); err == nil || !strings.HasPrefix(err.Error(), "profile: ") {
		t.Fatalf("Resolve with a bad profile: err %v, want one under the profile key", err)
	}
}

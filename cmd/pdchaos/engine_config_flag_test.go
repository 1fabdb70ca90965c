package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/internal/testkit"
)

// parseEngineFlags parses args as `pdchaos engine` does and applies
// --engine-config.
func parseEngineFlags(t *testing.T, args ...string) (engineFlags, error) {
	t.Helper()
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	var f engineFlags
	addEngineFlags(fs, &f)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	return f, applyEngineConfig(fs, &f)
}

// --engine-config carries every setting into the engine a role process
// runs; with a per-setting flag, with an unknown key or with a bad value it
// is refused, naming the problem.
func TestEngineConfigFlag(t *testing.T) {
	t.Parallel()
	cfg := testkit.FilledEngineConfig()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	flag := "--" + contract.EngineConfigFlag + "=" + string(b)
	f, err := parseEngineFlags(t, flag, "--role=decode", "--listen=127.0.0.1:0", "--"+contract.RunLabelFlag+"=pdchaos-1-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.cfg, cfg) || !reflect.DeepEqual(f.regressions, cfg.Regressions) || f.role != "decode" {
		t.Errorf("engine config\n%+v\nwant\n%+v (role %q)", f.cfg, cfg, f.role)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"with a per-setting flag", []string{flag, "--pages=10", "--tp=2"}, "--pages, --tp: give the settings one way"},
		{"unknown key", []string{"--" + contract.EngineConfigFlag + `={"tp":1,"pagez":3}`}, `unknown field "pagez"`},
		{"bad value", []string{"--" + contract.EngineConfigFlag + `={"tp":3}`}, "tp: 3 must divide 16"},
		{"not JSON", []string{"--" + contract.EngineConfigFlag + "=tp: 1"}, "--" + contract.EngineConfigFlag},
		{"two values", []string{"--" + contract.EngineConfigFlag + `={} {}`}, "more than one JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseEngineFlags(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// Every engine setting has its `pdchaos engine` flag, named by its YAML
// key, and with no flags given a role runs on Resolve's defaults: the
// flags derive them rather than repeat them.
func TestEngineFlagsCoverConfig(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	var f engineFlags
	addEngineFlags(fs, &f)
	// Keys whose flag is named otherwise: one --regression per name.
	renamed := map[string]string{"regressions": "regression"}
	typ := reflect.TypeOf(contract.EngineConfig{})
	for i := range typ.NumField() {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		name := strings.ReplaceAll(key, "_", "-")
		if r, ok := renamed[key]; ok {
			name = r
		}
		if fs.Lookup(name) == nil {
			t.Errorf("engine setting %s (%s) has no --%s flag", key, typ.Field(i).Name, name)
		}
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got, want := f.cfg, contract.DefaultEngineConfig()
	// Wire has no default on purpose: an explicit one that contradicts
	// --profile is an error, so "" means "the profile's, else nixl".
	if got.Wire != "" {
		t.Errorf("--wire defaults to %q, want empty", got.Wire)
	}
	got.Wire = want.Wire
	if !reflect.DeepEqual(got, want) {
		t.Errorf("engine flag defaults\n%+v\nwant Resolve's\n%+v", got, want)
	}
}

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

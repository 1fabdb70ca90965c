package harness

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/agents"
	"github.com/pdchaos/pdchaos/reports"
)

// jsonFields maps a struct's JSON names to their Go types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = f.Type
	}
	return out
}

// TestReportsMirrorResult: reports reads result.json into its own types so
// it never imports the harness. result.json's schema is Result's; every
// field the reports read must exist in it under the same JSON name with
// the same shape, so the two cannot drift apart unnoticed.
func TestReportsMirrorResult(t *testing.T) {
	t.Parallel()
	for _, pair := range []struct{ mirror, source reflect.Type }{
		{reflect.TypeFor[reports.RunResult](), reflect.TypeFor[Result]()},
		{reflect.TypeFor[reports.Phase](), reflect.TypeFor[PhaseStats]()},
		{reflect.TypeFor[reports.AgentStats](), reflect.TypeFor[agents.Stats]()},
	} {
		src := jsonFields(pair.source)
		for name, typ := range jsonFields(pair.mirror) {
			st, ok := src[name]
			switch {
			case !ok:
				t.Errorf("%s has %q, which %s (result.json) lacks", pair.mirror, name, pair.source)
			case typ.Kind() != st.Kind() && typ.String() != "json.RawMessage":
				t.Errorf("%s.%s is %s, %s has %s", pair.mirror, name, typ, pair.source, st)
			}
		}
	}
}

package catalog

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// FuzzKindParse reads any YAML mapping as a fault entry's parameters for
// every kind of the catalogue, as a scenario file supplies them: no panic;
// building the fault from what parses never panics either (a kind whose
// environment is missing says so); and the parsed values, written back as
// YAML the way a person would type them, parse to the same values.
func FuzzKindParse(f *testing.F) {
	for _, s := range []string{
		"link: control/0\nkinds: [abort, metadata]\ncount: 3\n",
		"delay: 250ms\njitter: 0s\nlink: kv/0\n",
		"rate: 0\n",
		"for: -1\nprobability: 1.5\n",
		"kinds: abort\n",
		"count: 9223372036854775808\n",
		"delay: 1e400\n",
		"{}",
		"link: [a, {b: c}]\n",
	} {
		f.Add(uint8(0), []byte(s))
	}
	kinds := Kinds()
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		var raw map[string]any
		if yaml.Unmarshal(in, &raw) != nil {
			return
		}
		for i, k := range kinds {
			if uint8(i) != which%uint8(len(kinds)) && which < uint8(len(kinds)) {
				continue // one kind per input, unless which says all
			}
			v, err := k.Parse(raw)
			if err != nil {
				continue
			}
			_, _ = k.New(raw, Env{Rand: rand.New(rand.NewPCG(1, 2))})
			typed := map[string]any{}
			for name, val := range v.m {
				switch x := val.(type) {
				case time.Duration:
					typed[name] = x.String()
				case []string:
					if x == nil {
						continue // the default of an unset list
					}
					typed[name] = x
				default:
					typed[name] = x
				}
			}
			text, err := yaml.Marshal(typed)
			if err != nil {
				t.Fatalf("%s: encode %v: %v", k.Name, typed, err)
			}
			var again map[string]any
			if err := yaml.Unmarshal(text, &again); err != nil {
				t.Fatalf("%s: re-read %q: %v", k.Name, text, err)
			}
			back, err := k.Parse(again)
			if err != nil || !reflect.DeepEqual(back.m, v.m) {
				t.Fatalf("%s: %v written as %q parses as %v (%v)", k.Name, v.m, text, back.m, err)
			}
		}
	})
}

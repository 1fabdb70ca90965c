package testkit

import (
	"reflect"
	"time"

	"github.com/pdchaos/pdchaos/contract"
)

// FilledEngineConfig is an EngineConfig with every field set to a value
// that is not its default and that Resolve accepts, so a test that carries
// a config somewhere (flags, JSON, a role process) sees every setting,
// including one added later: fields are filled by kind, then the few with
// a closed set of values are set by hand.
func FilledEngineConfig() contract.EngineConfig {
	var c contract.EngineConfig
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[time.Duration]():
			f.SetInt(int64(1234 * time.Millisecond))
		case f.Kind() == reflect.Int:
			f.SetInt(3)
		case f.Kind() == reflect.Uint64:
			f.SetUint(77)
		case f.Kind() == reflect.Float64:
			f.SetFloat(12345.5)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.String:
			f.SetString("filled")
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{"filled"}).Convert(f.Type()))
		}
	}
	c.TP = 2
	c.KVPostedWrites = 2
	c.Host = "127.0.0.1"
	c.Wire = contract.WireMooncake
	c.Gauges = contract.GaugesLogged
	c.Regressions = []string{contract.RankDesync}
	c.Profile = ""
	return c
}

// ZeroFields names the fields of c left at their zero value.
func ZeroFields(c contract.EngineConfig) []string {
	var out []string
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}

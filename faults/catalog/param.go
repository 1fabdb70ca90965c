package catalog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is a parameter's Go type, as the constructor receives it.
type Type string

// Parameter types. A duration is written like "250ms" in YAML; a list of
// strings as a YAML sequence.
const (
	TypeDuration Type = "time.Duration"
	TypeInt      Type = "int"
	TypeBool     Type = "bool"
	TypeString   Type = "string"
	TypeStrings  Type = "[]string"
)

// Param describes one parameter of a fault kind. Default, Min and Max are
// written the way a scenario file writes a value ("-1", "0s", "downstream")
// so the table prints as people type it; a test checks they parse.
type Param struct {
	// Name is the YAML key.
	Name string
	// Type is the Go type the constructor gets.
	Type Type
	// Required means the entry must set it; otherwise Default applies.
	Required bool
	// Default is the value when absent; "" means the type's zero value.
	Default string
	// Min and Max bound an int or duration, inclusive; "" means unbounded.
	Min, Max string
	// MinExclusive makes Min a strict bound (> Min), e.g. "rate > 0".
	MinExclusive bool
	// Enum lists the allowed values of a string or of each list element.
	Enum []string
	// Doc is one line saying what the parameter does, with its unit.
	Doc string
}

// Bounds renders Min, Max and Enum for people, e.g. "> 0", ">= -1",
// "one of upstream|downstream"; "" when unbounded.
func (p Param) Bounds() string {
	var parts []string
	if p.Min != "" {
		op := ">="
		if p.MinExclusive {
			op = ">"
		}
		parts = append(parts, op+" "+p.Min)
	}
	if p.Max != "" {
		parts = append(parts, "<= "+p.Max)
	}
	if len(p.Enum) > 0 {
		parts = append(parts, "one of "+strings.Join(p.Enum, "|"))
	}
	return strings.Join(parts, ", ")
}

// ParamError is a bad parameter of a fault entry: which parameter and why.
// Reason names the kind, so it reads alone after a field path.
type ParamError struct {
	Kind   string
	Param  string
	Reason string
}

// Error reads "field rate: 0 must be > 0 (kind bandwidth)".
func (e *ParamError) Error() string { return fmt.Sprintf("field %s: %s", e.Param, e.Reason) }

// Values are a kind's validated parameters with defaults filled in, each
// held as its Type. Getters return the zero value for a name the kind does
// not have, so constructors stay one line per field.
type Values struct {
	kind string
	m    map[string]any
}

// Duration returns a time.Duration parameter.
func (v Values) Duration(name string) time.Duration { d, _ := v.m[name].(time.Duration); return d }

// Int returns an int parameter.
func (v Values) Int(name string) int { n, _ := v.m[name].(int); return n }

// Bool returns a bool parameter.
func (v Values) Bool(name string) bool { b, _ := v.m[name].(bool); return b }

// String returns a string parameter.
func (v Values) String(name string) string { s, _ := v.m[name].(string); return s }

// Strings returns a []string parameter.
func (v Values) Strings(name string) []string { s, _ := v.m[name].([]string); return s }

// errorf makes a ParamError for param that names the kind.
func (v Values) errorf(param, format string, a ...any) error {
	return &ParamError{Kind: v.kind, Param: param, Reason: fmt.Sprintf(format, a...) + " (kind " + v.kind + ")"}
}

// parse converts a raw value (as a YAML or JSON decoder yields it, or a Go
// value of the parameter's type) and checks bounds and enum.
func (p Param) parse(raw any) (any, error) {
	v, err := p.convert(raw)
	if err != nil {
		return nil, err
	}
	if err := p.check(v); err != nil {
		return nil, err
	}
	return v, nil
}

func (p Param) convert(raw any) (any, error) {
	if raw == nil {
		return nil, fmt.Errorf("has no value (want %s)", p.Type)
	}
	switch p.Type {
	case TypeDuration:
		switch x := raw.(type) {
		case time.Duration:
			return x, nil
		case string:
			d, err := time.ParseDuration(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration like 250ms", x)
			}
			return d, nil
		}
		return nil, fmt.Errorf("%v is not a duration like 250ms", raw)
	case TypeInt:
		switch x := raw.(type) {
		case int:
			return x, nil
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), nil
			}
		case uint64:
			if x <= math.MaxInt {
				return int(x), nil
			}
		case float64: // JSON numbers
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int(x), nil
			}
		case string:
			return nil, fmt.Errorf("%q is not an integer", x)
		}
		return nil, fmt.Errorf("%v is not an integer", raw)
	case TypeBool:
		if b, ok := raw.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("%v is not true or false", raw)
	case TypeString:
		s, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("%v is not a string", raw)
		}
		if s == "" {
			return nil, fmt.Errorf("empty")
		}
		return s, nil
	case TypeStrings:
		switch x := raw.(type) {
		case []string:
			return slices.Clone(x), nil
		case []any:
			out := make([]string, len(x))
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("element %d: %v is not a string", i, e)
				}
				out[i] = s
			}
			return out, nil
		}
		return nil, fmt.Errorf("%v is not a list like [a, b]", raw)
	}
	return nil, fmt.Errorf("parameter type %q unknown", p.Type)
}

// check applies bounds and the enum to a converted value.
func (p Param) check(v any) error {
	if p.Min != "" || p.Max != "" {
		n, lo, hi, err := p.numbers(v)
		if err != nil {
			return err
		}
		if p.Min != "" && (n < lo || (p.MinExclusive && n == lo)) {
			return fmt.Errorf("%s must be %s", p.show(v), p.Bounds())
		}
		if p.Max != "" && n > hi {
			return fmt.Errorf("%s must be %s", p.show(v), p.Bounds())
		}
	}
	if len(p.Enum) == 0 {
		return nil
	}
	var elems []string
	switch x := v.(type) {
	case string:
		elems = []string{x}
	case []string:
		elems = x
	}
	for _, e := range elems {
		if !slices.Contains(p.Enum, e) {
			return fmt.Errorf("%q is not one of %s", e, strings.Join(p.Enum, ", "))
		}
	}
	return nil
}

// numbers returns v, Min and Max as int64 (nanoseconds for durations).
func (p Param) numbers(v any) (n, lo, hi int64, err error) {
	bound := func(s string) (int64, error) {
		if s == "" {
			return 0, nil
		}
		var b int64
		var err error
		switch p.Type {
		case TypeInt:
			var i int
			i, err = strconv.Atoi(s)
			b = int64(i)
		case TypeDuration:
			var d time.Duration
			d, err = time.ParseDuration(s)
			b = int64(d)
		default:
			err = fmt.Errorf("type %s has no bounds", p.Type)
		}
		if err != nil {
			return 0, fmt.Errorf("bound %q of %s: %w", s, p.Name, err)
		}
		return b, nil
	}
	if lo, err = bound(p.Min); err != nil {
		return 0, 0, 0, err
	}
	if hi, err = bound(p.Max); err != nil {
		return 0, 0, 0, err
	}
	return asInt64(v), lo, hi, nil
}

func asInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case time.Duration:
		return int64(x)
	}
	return 0
}

func (p Param) show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// defaultValue is the parsed Default, or the type's zero value.
func (p Param) defaultValue() (any, error) {
	if p.Default == "" {
		switch p.Type {
		case TypeDuration:
			return time.Duration(0), nil
		case TypeInt:
			return 0, nil
		case TypeBool:
			return false, nil
		case TypeString:
			return "", nil
		case TypeStrings:
			return []string(nil), nil
		}
		return nil, fmt.Errorf("parameter type %q unknown", p.Type)
	}
	var raw any = p.Default
	switch p.Type {
	case TypeInt:
		i, err := strconv.Atoi(p.Default)
		if err != nil {
			return nil, fmt.Errorf("default %q of %s: %w", p.Default, p.Name, err)
		}
		raw = i
	case TypeBool:
		b, err := strconv.ParseBool(p.Default)
		if err != nil {
			return nil, fmt.Errorf("default %q of %s: %w", p.Default, p.Name, err)
		}
		raw = b
	case TypeStrings:
		raw = strings.Split(p.Default, ",")
	}
	return p.parse(raw)
}

package faults

import "testing"

func TestDuplicateName(t *testing.T) {
	for _, tc := range []struct {
		link  string
		kinds []string
		want  string
	}{
		{"notify/0", nil, "duplicate(notify/0,all)"},
		{"control/1", []string{"metadata", "abort"}, "duplicate(control/1,metadata+abort)"},
	} {
		got := DuplicateName(tc.link, tc.kinds)
		if got != tc.want {
			t.Errorf("DuplicateName(%q, %q) = %q, want %q", tc.link, tc.kinds, got, tc.want)
		}
		if !DuplicatesOnly(got) {
			t.Errorf("DuplicatesOnly(%q) = false", got)
		}
	}
	for _, name := range []string{"drop(notify/0,status)", "corrupt(control/0,all,garble)", "duplicate", "duplicate(notify/0", "sigstop(prefill)", ""} {
		if DuplicatesOnly(name) {
			t.Errorf("DuplicatesOnly(%q) = true, want false", name)
		}
	}
}

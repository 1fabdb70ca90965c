package harness

import "testing"

// TestReproLine: the printed repro line carries every target flag the run
// was given, quoted for a shell, with --target added when missing.
func TestReproLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		kind string
		want string
	}{
		{"bundled default", nil, "bundled", "pdchaos repro runs/x/repro.yaml --seed 42 --target=bundled"},
		{"external flags", []string{"--target=external", "--router=http://127.0.0.1:8000", "--metrics=http://127.0.0.1:30000/metrics",
			"--metrics=http://127.0.0.1:30001/metrics", "--engine-url=http://127.0.0.1:30000", "--debug-hooks"}, "external",
			"pdchaos repro runs/x/repro.yaml --seed 42 --target=external --router=http://127.0.0.1:8000 " +
				"--metrics=http://127.0.0.1:30000/metrics --metrics=http://127.0.0.1:30001/metrics --engine-url=http://127.0.0.1:30000 --debug-hooks"},
		{"kind added", []string{"--check-answers"}, "procs", "pdchaos repro runs/x/repro.yaml --seed 42 --target=procs --check-answers"},
		{"quoted", []string{"--target=external", "--router=http://h/a b"}, "external",
			"pdchaos repro runs/x/repro.yaml --seed 42 --target=external '--router=http://h/a b'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ReproLine("runs/x/repro.yaml", 42, targetArgs(tc.args, tc.kind)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

package harness

import (
	"context"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Versions names what is running: pdchaos's module version, its VCS
// revision (with "+dirty" for uncommitted changes) when the binary was
// built from a checkout, and the Go toolchain.
func Versions(ctx context.Context) map[string]string {
	v := map[string]string{"go": runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	defer func() {
		if v["revision"] == "" {
			if rev := gitRevision(ctx); rev != "" {
				v["revision"] = rev
			}
		}
	}()
	v["pdchaos"] = bi.Main.Version
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if dirty {
			rev += "+dirty"
		}
		v["revision"] = rev
	}
	return v
}

// gitRevision asks git for the working directory's commit when the binary
// carries none (go run, or GOFLAGS=-buildvcs=false); "" when there is no
// git or no checkout.
func gitRevision(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out)) + " (git in the working directory)"
}

// targetArgs are the flags a replay needs to reach the same target: the
// given ones, with --target added when they do not name it.
func targetArgs(given []string, kind string) []string {
	for _, a := range given {
		if a == "--target" || strings.HasPrefix(a, "--target=") {
			return slices.Clone(given)
		}
	}
	return append([]string{"--target=" + kind}, given...)
}

// ReproLine is the command that replays a run: its repro.yaml, its seed and
// every target flag it was given, shell-quoted where needed.
func ReproLine(reproPath string, seed uint64, args []string) string {
	parts := []string{"pdchaos", "repro", shellQuote(reproPath), "--seed", strconv.FormatUint(seed, 10)}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

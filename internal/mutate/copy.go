package mutate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CopyModule copies the module at src into dst: the files git tracks and
// the untracked ones it does not ignore, so a copy holds what a commit of
// the working tree would, and no build output, runs or binaries.
func CopyModule(ctx context.Context, src, dst string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("copy module %s: list files: %w", src, err)
	}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" {
			continue
		}
		if err := copyFile(filepath.Join(src, rel), filepath.Join(dst, rel)); err != nil {
			return fmt.Errorf("copy module %s: %w", src, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		if os.IsNotExist(err) { // tracked but deleted in the working tree
			return nil
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Build compiles every package of the module copy at dir (a mutant that
// does not compile is reported, never run) and writes its commands'
// binaries to dir/bin/, in one go build so the packages compile once. It
// returns the pdchaos binary; the error carries the compiler's output.
func Build(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "bin")+string(filepath.Separator), "./...")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./... in %s: %w\n%s", dir, err, strings.TrimSpace(out.String()))
	}
	return filepath.Join(dir, "bin", "pdchaos"), nil
}

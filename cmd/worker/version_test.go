package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionOfEveryBinary builds the four commands as a user would and
// checks that --version prints what the Go toolchain recorded in each
// binary (go version -m): the module path and version, and the VCS revision
// when the build was stamped with one ("rev unknown" otherwise: a tree
// without .git, a git worktree, or GOFLAGS=-buildvcs=false).
func TestVersionOfEveryBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four binaries")
	}
	dir := buildAll(t)
	for _, b := range allBinaries {
		bin := filepath.Join(dir, b)
		meta, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", b, err)
		}
		var modVersion, rev string
		for _, line := range strings.Split(string(meta), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/cotrain/cotrain":
				modVersion = f[2]
			case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
				rev = strings.TrimPrefix(f[1], "vcs.revision=")
			}
		}
		want := b + " github.com/cotrain/cotrain " + modVersion + " rev "
		if rev == "" {
			want += "unknown"
		} else {
			want += rev[:12]
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Errorf("%s --version: %v", b, err)
			continue
		}
		if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 0 {
			t.Errorf("%s --version = %q, want one line starting %q", b, got, want)
		}
		t.Logf("%s", out)
	}
}

package cli

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// ErrVersion is what a binary's flag parsing returns when --version was
// given: main then prints Version and exits 0.
var ErrVersion = errors.New("cli: --version")

// VersionFlag adds --version to fs; after fs.Parse, *v tells whether it
// was given.
func VersionFlag(fs *flag.FlagSet) (v *bool) {
	return fs.Bool("version", false, "print the version (module version and VCS revision) and exit")
}

// Version describes this binary for --version: its name, the module's
// version, the VCS revision it was built from (with its commit time, and
// "modified" when the tree had uncommitted changes), the Go version and
// the platform, e.g.
//
//	worker github.com/cotrain/cotrain (devel) rev 4c36a6c0e1f2 2026-11-25T22:32:00Z go1.26.8 android/arm64
//
// "(devel)" is the module version of a build from a checkout; a binary
// installed with go install MODULE@vX.Y.Z says vX.Y.Z. Builds without VCS
// data (go run, -buildvcs=false, a tree without .git) say "rev unknown".
func Version(name string) string {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return versionOf(name, bi) + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// versionOf is Version without the Go version and platform, for a given
// build info (nil when the binary has none).
func versionOf(name string, bi *debug.BuildInfo) string {
	if bi == nil {
		return name + " (no build info) rev unknown"
	}
	path, vers := bi.Main.Path, bi.Main.Version
	if path == "" {
		path = "github.com/cotrain/cotrain"
	}
	if vers == "" {
		vers = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s rev ", name, path, vers)
	if rev == "" {
		b.WriteString("unknown")
		return b.String()
	}
	b.WriteString(rev[:min(len(rev), 12)])
	if at != "" {
		b.WriteString(" " + at)
	}
	if modified {
		b.WriteString(" modified")
	}
	return b.String()
}

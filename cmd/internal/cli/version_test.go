package cli

import (
	"flag"
	"io"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const mod = "github.com/cotrain/cotrain"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"checkout", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "(devel)"},
			Settings: settings("vcs", "git", "vcs.revision", "4c36a6c0e1f2aa5b", "vcs.time", "2026-11-25T22:32:00Z", "vcs.modified", "false")},
			"hub " + mod + " (devel) rev 4c36a6c0e1f2 2026-11-25T22:32:00Z"},
		{"uncommitted changes", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "(devel)"},
			Settings: settings("vcs.revision", "4c36a6c0e1f2aa5b", "vcs.modified", "true")},
			"hub " + mod + " (devel) rev 4c36a6c0e1f2 modified"},
		{"go install at a tag", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "v0.3.0"}},
			"hub " + mod + " v0.3.0 rev unknown"},
		{"no VCS data", &debug.BuildInfo{Main: debug.Module{Path: mod}}, "hub " + mod + " (devel) rev unknown"},
		{"no build info", nil, "hub (no build info) rev unknown"},
	} {
		if got := versionOf("hub", tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A test binary has build info (no VCS data: go test does not stamp it).
	if v := Version("x"); !strings.HasPrefix(v, "x ") || !strings.Contains(v, " go1.") {
		t.Errorf("Version = %q", v)
	}
}

func TestVersionFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	v := VersionFlag(fs)
	if err := fs.Parse(nil); err != nil || *v {
		t.Errorf("no flags: %v, version %v", err, *v)
	}
	if err := fs.Parse([]string{"--version"}); err != nil || !*v {
		t.Errorf("--version: %v, version %v", err, *v)
	}
}

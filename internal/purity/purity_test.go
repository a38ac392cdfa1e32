package purity

import (
	"strings"
	"testing"
)

// TestCheck runs the checker on files that keep and break each rule: it
// must report every breach, with its line, and nothing in the clean files.
func TestCheck(t *testing.T) {
	cases := []struct {
		file      string
		durations bool
		want      []string // one substring per violation, in order
	}{
		{"clean.go", false, nil},
		{"durations.go", true, nil},
		{"durations.go", false, []string{`durations.go:3:8: imports "time"`}},
		{"impure.go", false, []string{
			`impure.go:4:2: imports "context"`,
			`impure.go:5:2: imports "net/http" (a core may not use package net`,
			`impure.go:6:2: imports "os"`,
			`impure.go:7:2: imports "sync"`,
			`impure.go:8:2: imports "time"`,
			`impure.go:15:2: starts a goroutine`,
		}},
		{"impure.go", true, []string{"context", "net/http", "os", "sync", "goroutine", "impure.go:17:6: uses time.Now"}},
		{"clock.go", true, []string{"clock.go:9:12: uses time.Time", "clock.go:9:31: uses time.Now"}},
	}
	for _, c := range cases {
		var durations []string
		if c.durations {
			durations = []string{c.file}
		}
		got, err := Check("testdata", []string{c.file}, durations)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Errorf("%s (durations %v): %d violations %v, want %d", c.file, c.durations, len(got), got, len(c.want))
			continue
		}
		for i, v := range got {
			if !strings.Contains(v.String(), c.want[i]) {
				t.Errorf("%s (durations %v): violation %d is %q, want it to contain %q", c.file, c.durations, i, v, c.want[i])
			}
		}
	}
}

// TestCheckErrors: a file that is not there, and a durations name that is
// not checked, are errors, not a clean bill.
func TestCheckErrors(t *testing.T) {
	if _, err := Check("testdata", []string{"missing.go"}, nil); err == nil {
		t.Error("a missing file passed")
	}
	if _, err := Check("testdata", []string{"clean.go"}, []string{"durations.go"}); err == nil ||
		!strings.Contains(err.Error(), "durations.go is in durations but not in the files checked") {
		t.Errorf("durations outside the files: %v", err)
	}
}

// TestImports: of the prefix's packages, only the allowed ones pass, and
// only exactly (not the packages below them).
func TestImports(t *testing.T) {
	files := []string{"clean.go", "impure.go"}
	vs, err := Imports("testdata", files, "net", []string{"net/url"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || !strings.Contains(vs[0].String(), `impure.go:5:2: imports "net/http"`) {
		t.Errorf("violations %v, want net/http's alone", vs)
	}
	if vs, err := Imports("testdata", files, "net", []string{"net/http"}); err != nil || len(vs) != 0 {
		t.Errorf("net/http allowed: %v, %v", vs, err)
	}
	if vs, err := Imports("testdata", files, "net", []string{"net"}); err != nil || len(vs) != 1 {
		t.Errorf("net allowed, net/http imported: %v, %v (want one violation)", vs, err)
	}
	if _, err := Imports("testdata", []string{"missing.go"}, "net", nil); err == nil {
		t.Error("a missing file passed")
	}
}

// TestSorted: every file of a folder must be listed once, and only files
// that are there.
func TestSorted(t *testing.T) {
	all := []string{"clean.go", "clock.go", "durations.go", "impure.go"}
	if err := Sorted("testdata", all[:2], all[2:]); err != nil {
		t.Errorf("every file listed once: %v", err)
	}
	for _, c := range []struct {
		core, driver []string
		want         string
	}{
		{all[:2], all[3:], "durations.go not listed as core or driver code"},
		{all[:3], all[2:], "durations.go is listed both as core and as driver code"},
		{all, []string{"gone.go"}, "gone.go is listed but not in testdata"},
	} {
		if err := Sorted("testdata", c.core, c.driver); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("core %v driver %v: %v, want %q", c.core, c.driver, err, c.want)
		}
	}
}

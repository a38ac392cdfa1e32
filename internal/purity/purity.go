// Package purity checks that a protocol core is pure: that its files never
// reach for the clock, the network, the operating system or a goroutine.
// The hub's and the worker's cores rest on that (hub/doc.go, worker/doc.go):
// the same code runs under the libp2p drivers and, on a virtual clock,
// under the simulator, and it does so deterministically only if nothing in
// it reads time or schedules work of its own. Tests in hub/ and worker/
// call Check on their core files, so the purity is checked, not hoped for.
//
// The rules, for every file Check is given:
//
//  1. No import of a forbidden package or of one below it: time, context,
//     net (so also net/http), os (so also os/exec), and the standard
//     library's sync, whose locks only make sense with goroutines.
//  2. No go statement.
//
// A file named in Check's durations set may import time, but use of it
// only for the Duration type and its unit constants (a config field such
// as hub.Config.Tick is a length, not a reading of the clock): any other
// name from package time (time.Now, time.Sleep, time.NewTimer...) is a
// violation there too.
package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Forbidden lists the import paths a core file may not use, nor any path
// below them.
var Forbidden = []string{"time", "context", "net", "os", "sync"}

// durationNames are the names of package time a durations file may use.
var durationNames = []string{"Duration", "Nanosecond", "Microsecond", "Millisecond", "Second", "Minute", "Hour"}

// Violation is one breach of the rules: where, and what.
type Violation struct {
	Pos  token.Position
	What string
}

func (v Violation) String() string { return fmt.Sprintf("%s: %s", v.Pos, v.What) }

// Check parses each of files (paths relative to dir) and returns every
// violation of the package's rules, in file order. The files in durations
// (a subset of files, by the same names) may use package time for
// durations only. An error is returned for a file that cannot be read or
// parsed, or a durations name not in files.
func Check(dir string, files, durations []string) ([]Violation, error) {
	for _, d := range durations {
		if !slices.Contains(files, d) {
			return nil, fmt.Errorf("purity: %s is in durations but not in the files checked", d)
		}
	}
	fset := token.NewFileSet()
	var out []Violation
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("purity: %w", err)
		}
		out = append(out, checkFile(fset, f, slices.Contains(durations, name))...)
	}
	return out, nil
}

// checkFile returns f's violations.
func checkFile(fset *token.FileSet, f *ast.File, durations bool) []Violation {
	var out []Violation
	bad := func(p token.Pos, format string, a ...any) {
		out = append(out, Violation{fset.Position(p), fmt.Sprintf(format, a...)})
	}
	timeName := "" // the name package time goes by in a durations file
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			bad(imp.Pos(), "unreadable import path %s", imp.Path.Value)
			continue
		}
		if path == "time" && durations {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
			continue
		}
		if root := forbidden(path); root != "" {
			bad(imp.Pos(), "imports %q (a core may not use package %s or any below it)", path, root)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			bad(n.Pos(), "starts a goroutine (a core is driven from one goroutine and schedules nothing itself)")
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName &&
				!slices.Contains(durationNames, n.Sel.Name) {
				bad(n.Pos(), "uses %s.%s (a core file may use package time for durations only)", timeName, n.Sel.Name)
			}
		}
		return true
	})
	return out
}

// forbidden returns the entry of Forbidden that path is or lies below, or "".
func forbidden(path string) string {
	for _, root := range Forbidden {
		if path == root || strings.HasPrefix(path, root+"/") {
			return root
		}
	}
	return ""
}

// Imports checks that files (paths relative to dir) import, of the
// packages whose path starts with prefix (the module's own, say), only
// those in allowed (exactly, not below them). A core that must reach the
// model only through its outputs (the hub's: it asks its driver for each
// optimizer step) lists what it may use, so that an import of the engine
// fails a test instead of slipping in. It returns every other such import.
func Imports(dir string, files []string, prefix string, allowed []string) ([]Violation, error) {
	fset := token.NewFileSet()
	var out []Violation
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			return nil, fmt.Errorf("purity: %w", err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil || !strings.HasPrefix(path, prefix) || slices.Contains(allowed, path) {
				continue // an unreadable path is Check's to report
			}
			out = append(out, Violation{fset.Position(imp.Pos()),
				fmt.Sprintf("imports %q (of %s, this core may import only %s)", path, prefix, strings.Join(allowed, ", "))})
		}
	}
	return out, nil
}

// Sorted checks that every non-test Go file in dir is named exactly once in
// core or driver, so that a file added to a package with a core is put on
// one side on purpose: a new core file is then checked, and a driver file
// is one that was meant to be.
func Sorted(dir string, core, driver []string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return fmt.Errorf("purity: %w", err)
	}
	var missing []string
	for _, p := range names {
		name := filepath.Base(p)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		in := 0
		for _, list := range [][]string{core, driver} {
			if slices.Contains(list, name) {
				in++
			}
		}
		switch in {
		case 0:
			missing = append(missing, name)
		case 2:
			return fmt.Errorf("purity: %s is listed both as core and as driver code", filepath.Join(dir, name))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("purity: %s: %s not listed as core or driver code: add each to one list", dir, strings.Join(missing, ", "))
	}
	for _, name := range append(slices.Clone(core), driver...) {
		if !slices.Contains(names, filepath.Join(dir, name)) {
			return fmt.Errorf("purity: %s is listed but not in %s", name, dir)
		}
	}
	return nil
}

// Require is Sorted and Check for a test: it fails t for every file of dir
// left unlisted and for every violation in the core files.
func Require(t testing.TB, dir string, core, durations, driver []string) {
	t.Helper()
	if err := Sorted(dir, core, driver); err != nil {
		t.Error(err)
	}
	vs, err := Check(dir, core, durations)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

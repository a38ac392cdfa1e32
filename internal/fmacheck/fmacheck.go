// Package fmacheck finds fused multiply-add instructions in an arm64 build
// of a command, for the tests that keep cotrain's arithmetic the same on
// every architecture.
//
// Go fuses x*y + z into one instruction on arm64 (and on amd64 with
// GOAMD64=v3) unless the product is converted explicitly (the Go spec,
// "Floating-point operators"): a fused operation rounds once where amd64
// rounds twice, so the same code leaves other bits on an arm64 phone than
// on an amd64 hub. Wrapping the product in float32(...) or float64(...)
// keeps it apart.
//
// Caller's duties:
//  1. Call Find from a test that may cross-compile (skip it under -short):
//     it builds the command with the go tool found on PATH.
//  2. Report what it returns as the test's failure: each entry names the
//     function and the source line.
package fmacheck

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ErrNoGo is returned when no go command is on PATH.
var ErrNoGo = errors.New("fmacheck: no go command on PATH")

var fusedOp = regexp.MustCompile(`\b(FMADD|FMSUB|FNMADD|FNMSUB)[SD]\b`)

// Find builds the command pkg for linux/arm64 (CGO off) into dir and
// returns "function file:line" for every fused multiply-add in the
// functions whose names match funcs (a go tool objdump -s pattern), sorted.
// It fails unless every name in mustSee is among the functions it scanned,
// so that a pattern that matches nothing cannot pass.
func Find(dir, pkg, funcs string, mustSee ...string) ([]string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, ErrNoGo
	}
	bin := filepath.Join(dir, "arm64.bin")
	build := exec.Command(goBin, "build", "-o", bin, pkg)
	build.Env = append(build.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("fmacheck: arm64 build of %s: %w\n%s", pkg, err, out)
	}
	out, err := exec.Command(goBin, "tool", "objdump", "-s", funcs, bin).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("fmacheck: objdump: %w\n%s", err, out)
	}
	for _, fn := range mustSee {
		if !strings.Contains(string(out), fn+"(SB)") {
			return nil, fmt.Errorf("fmacheck: %s not found in the arm64 build of %s", fn, pkg)
		}
	}
	where := map[string]bool{}
	fn := ""
	for _, line := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(line, "TEXT "); ok {
			fn, _, _ = strings.Cut(f, " ")
			continue
		}
		if fusedOp.MatchString(line) {
			pos, _, _ := strings.Cut(strings.TrimSpace(line), "\t")
			where[fn+" "+pos] = true
		}
	}
	s := make([]string, 0, len(where))
	for w := range where {
		s = append(s, w)
	}
	sort.Strings(s)
	return s, nil
}

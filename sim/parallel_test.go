package sim

import (
	"context"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestParallelRunsMatch: a scenario's runs give the same report bit for
// bit whether they go on one at a time or all at once, and Options.Progress
// is called from the runs that go on together. It is TestDeterminism's
// question on a scenario small enough (lenet5 on 512 synthetic images, four
// iterations of four runs) to run under the race detector in seconds:
// .ci/run's race stage runs it, and not the simulator's long tests, for
// Run's goroutines, the solo runs' shared gradients and the callbacks.
func TestParallelRunsMatch(t *testing.T) {
	sc, err := ParseScenario(strings.NewReader(`name parallel
seed        3
model       lenet5
data        synthetic train=512 test=64
batch       32
iterations  4
eval        every=2
policies    solo fixed adaptive
network     bandwidth=32Mbit latency=2ms medium=shared
hub         nexus-7
device      nexus-6p
device      meizu-mx3
`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := LoadData(sc, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	run := func(parallel int) (*Report, map[string]int) {
		var mu sync.Mutex
		calls := map[string]int{}
		rep, err := Run(context.Background(), sc, d, Options{Parallel: parallel, Progress: func(p Progress) {
			mu.Lock()
			calls[p.Run]++
			mu.Unlock()
		}})
		if err != nil {
			t.Fatalf("Parallel %d: %v", parallel, err)
		}
		return rep, calls
	}
	one, callsOne := run(1)
	all, callsAll := run(4)
	if len(one.Runs) != 4 {
		t.Fatalf("%d runs, want 4 (two solo, fixed, adaptive)", len(one.Runs))
	}
	for _, r := range one.Runs {
		if r.Iterations != 4 || r.Checks != r.Iterations {
			t.Errorf("%s: %d iterations, invariants checked at %d, want 4 and 4", r.Name, r.Iterations, r.Checks)
		}
	}
	if !reflect.DeepEqual(one, all) {
		t.Error("the runs one at a time and all at once gave different reports")
	}
	if !reflect.DeepEqual(callsOne, callsAll) || len(callsOne) != 4 {
		t.Errorf("Progress calls per run: %v one at a time, %v all at once; want the same, for 4 runs", callsOne, callsAll)
	}
}

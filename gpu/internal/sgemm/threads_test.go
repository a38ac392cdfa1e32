package sgemm

import (
	"runtime"
	"slices"
	"testing"
)

// whoTask records which Thread ran each part.
type whoTask struct{ by []*Thread }

func (w *whoTask) Run(th *Thread, i int) { w.by[i] = th }

// TestSetThreadsCaps: a Thread capped at one thread runs every part of
// Parallel itself, whatever GOMAXPROCS; without the cap it hands parts to
// the pool; Threads reports the lower of the cap and GOMAXPROCS.
func TestSetThreadsCaps(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(4)
	var th Thread
	for _, tc := range []struct{ set, want int }{{0, 4}, {-3, 4}, {1, 1}, {2, 2}, {8, 4}} {
		th.SetThreads(tc.set)
		if got := th.Threads(); got != tc.want {
			t.Errorf("SetThreads(%d) at GOMAXPROCS 4: Threads() = %d, want %d", tc.set, got, tc.want)
		}
	}
	th.SetThreads(1)
	task := &whoTask{by: make([]*Thread, 64)}
	th.Parallel(len(task.by), task)
	for i, by := range task.by {
		if by != &th {
			t.Fatalf("capped at 1 thread: part %d ran on another Thread (%p, want %p)", i, by, &th)
		}
	}
	// Uncapped, a helper should take some of many parts that each take a
	// while; allow a few tries on a busy machine.
	th.SetThreads(0)
	for try := 0; ; try++ {
		slow := &slowWho{whoTask{by: make([]*Thread, 64)}}
		th.Parallel(len(slow.by), slow)
		if slices.ContainsFunc(slow.by, func(p *Thread) bool { return p != &th }) {
			break
		}
		if try == 20 {
			t.Fatal("uncapped: no part of 64 ran on a helper in 20 tries")
		}
	}
}

// slowWho is whoTask with parts that take tens of microseconds.
type slowWho struct{ whoTask }

func (w *slowWho) Run(th *Thread, i int) {
	s := 0.0
	for k := range 20000 {
		s += float64(k)
	}
	if s < 0 {
		panic("unreachable")
	}
	w.whoTask.Run(th, i)
}

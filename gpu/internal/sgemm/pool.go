package sgemm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Thread is one goroutine's state for products and parallel work: pack
// buffers, an edge-tile buffer, spare scratch slots and the descriptor of the
// parallel job it leads. The zero value is ready. A Thread must not be used
// by two goroutines at once.
type Thread struct {
	packedA, packedB []float32
	tile             [maxTile]float32
	spare            [4][]float32

	job    job      // the job this thread leads in Parallel
	task   gemmTask // GemmParallel's task, kept here so that it does not escape per call
	shared PackedA  // GemmParallel's op(A), packed once for all blocks
	helper bool     // a pool goroutine's Thread: Parallel runs serially on it
	busy   bool     // leading a job: a nested Parallel runs serially
	max    int      // SetThreads's cap; 0: GOMAXPROCS
	fam    *arch    // the micro-kernel family; nil: archs[0], the fastest (tests set others)
}

// arch is the micro-kernel family t's products use.
func (t *Thread) arch() *arch {
	if t.fam != nil {
		return t.fam
	}
	return archs[0]
}

// SetThreads caps at n the threads that t's Parallel and GemmParallel use,
// t's own goroutine included; n <= 0 removes the cap (GOMAXPROCS, the
// default). Several trainers in one process (a hub and its workers in a
// test or a benchmark) each take a share of the cores this way instead of
// all of them each: their helpers would otherwise spin for cores the other
// trainers are computing on. Results do not depend on it.
func (t *Thread) SetThreads(n int) { t.max = max(n, 0) }

// Threads returns the number of threads t's parallel calls use at most:
// GOMAXPROCS, or SetThreads's cap when lower.
func (t *Thread) Threads() int {
	n := runtime.GOMAXPROCS(0)
	if t.max > 0 && t.max < n {
		n = t.max
	}
	return n
}

// Floats returns scratch slot i (0..3) with n elements, grown when too small
// and otherwise reused: its contents are whatever the last user left.
func (t *Thread) Floats(i, n int) []float32 {
	t.spare[i] = grow(t.spare[i], n)
	return t.spare[i]
}

// Task is work split into independent parts, for Parallel. Run does part i
// with th, the executing goroutine's Thread. Parts may run in any order and
// concurrently; for reproducible results each must write only its own
// outputs and compute them the same way whichever thread runs it.
type Task interface {
	Run(th *Thread, i int)
}

// job is one Parallel call: parts are claimed from next until n.
type job struct {
	task    Task
	n       int64
	next    atomic.Int64
	pending atomic.Int32 // helpers sent this job that have not finished it
	wg      sync.WaitGroup
}

// spins is how many times a helper polls for its next job, and a caller for
// its helpers' last parts, before sleeping: a few hundred microseconds, more
// than the serial stretches between the parallel kernels of a step.
// Waking a sleeping goroutine costs about as much (a futex wake and a steal
// from the waker's run queue), a large share of one kernel of a training
// step; the kernels of a step follow each other closely, so the spin
// usually ends in work. It counts polls, not time, so that it behaves the
// same under a fake clock.
const spins = 1 << 15

func (j *job) work(t *Thread) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.task.Run(t, int(i))
	}
}

// The pool: helper goroutines started on demand (up to GOMAXPROCS-1 at the
// largest GOMAXPROCS seen) that live for the rest of the process, polling
// for jobs a while after each one and parked on the channel after that.
// (They belong to the goroutine group of whoever started them: do not let
// the first parallel kernel of a process run inside a testing/synctest
// bubble, whose end would wait for them.) Every Parallel call sends its job to as many helpers as
// it wants and does parts itself too, so it makes progress even when all
// helpers are busy with another caller's job.
var pool struct {
	mu      sync.Mutex
	started atomic.Int32
	jobs    chan *job
}

func init() { pool.jobs = make(chan *job, 1024) }

func startHelpers(n int) {
	if int(pool.started.Load()) >= n {
		return
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for int(pool.started.Load()) < n {
		pool.started.Add(1)
		go helper()
	}
}

func helper() {
	t := &Thread{helper: true}
	for {
		j := nextJob()
		j.work(t)
		j.pending.Add(-1)
		j.wg.Done()
	}
}

// nextJob polls pool.jobs spins times, then sleeps on it.
func nextJob() *job {
	for range spins {
		select {
		case j := <-pool.jobs:
			return j
		default:
		}
	}
	return <-pool.jobs
}

// Threads is the number of threads Parallel uses at most: GOMAXPROCS.
func Threads() int { return runtime.GOMAXPROCS(0) }

// Parallel runs task.Run(th, i) for every i in [0, n) on up to t.Threads()
// threads, t's goroutine among them, and returns when all parts are done.
// It runs the parts in order on t alone when n or GOMAXPROCS is 1 or when
// called from inside a part (nested parallelism would only oversubscribe).
func (t *Thread) Parallel(n int, task Task) {
	threads := t.Threads()
	if n <= 1 || threads <= 1 || t.helper || t.busy {
		for i := 0; i < n; i++ {
			task.Run(t, i)
		}
		return
	}
	h := min(threads, n) - 1
	startHelpers(h)
	j := &t.job
	j.task, j.n = task, int64(n)
	j.next.Store(0)
	j.pending.Store(int32(h))
	j.wg.Add(h)
	for range h {
		pool.jobs <- j
	}
	t.busy = true
	j.work(t)
	t.busy = false
	// Spin for the helpers' last parts before sleeping on the WaitGroup.
	for i := 0; i < spins && j.pending.Load() > 0; i++ {
	}
	j.wg.Wait()
	j.task = nil
}

// parallelMin is the smallest product, in multiply-adds, that GemmParallel
// splits: below it, waking a helper costs more than it saves.
const parallelMin = 1 << 19

// GemmParallel is Gemm on up to t.Threads() threads. C is cut into blocks of
// whole register tiles, two per thread, along n or m (see below); each block runs the serial algorithm with
// its thread's pack buffers, so every element of C sees the same arithmetic
// as in Gemm and the result has the same bits whatever the thread count.
func (t *Thread) GemmParallel(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	threads := t.Threads()
	if threads <= 1 || t.helper || t.busy || m*n*k < parallelMin {
		t.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	g := &t.task.g
	*g = args{transA, transB, m, n, k, alpha, beta, a, b, c, lda, ldb, ldc, nil}
	if g.trivial() {
		return
	}
	ar := t.arch()
	tm, tn := (m+ar.mr-1)/ar.mr, (n+ar.nr-1)/ar.nr
	// Two blocks per thread, so that a caller whose helper starts late can
	// take over its share. Along n when C has a tile column per thread:
	// op(A) is packed once, here, and every block reads it (each packing it
	// again cost as much as its products on a fully connected layer of a
	// LeNet). Otherwise along m, each block packing the narrow op(B).
	blocks := 2 * threads
	gm, gn := 1, 1
	if tn >= threads {
		gn = min(tn, blocks)
		t.shared.pack(ar, transA, m, k, a, lda)
		g.pa = &t.shared
	} else {
		gm = min(tm, blocks)
	}
	t.task.ar, t.task.tm, t.task.tn, t.task.gm, t.task.gn = ar, tm, tn, gm, gn
	t.Parallel(gm*gn, &t.task)
	t.task.g = args{} // drop the caller's slices
}

// gemmTask is GemmParallel's Task: part i computes block (i/gn, i%gn) of a
// gm×gn grid over C's tm×tn register tiles.
type gemmTask struct {
	g              args
	ar             *arch
	tm, tn, gm, gn int
}

func (w *gemmTask) Run(t *Thread, i int) {
	bi, bj := i/w.gn, i%w.gn
	i0, i1 := bi*w.tm/w.gm*w.ar.mr, min((bi+1)*w.tm/w.gm*w.ar.mr, w.g.m)
	j0, j1 := bj*w.tn/w.gn*w.ar.nr, min((bj+1)*w.tn/w.gn*w.ar.nr, w.g.n)
	if i0 < i1 && j0 < j1 {
		t.rect(w.ar, &w.g, i0, i1, j0, j1)
	}
}

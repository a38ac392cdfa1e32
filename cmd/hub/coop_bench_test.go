package main

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/cotrain/cotrain/worker"
)

// randomBatches serves fixed random MNIST-shaped samples: the step's cost
// does not depend on the values, and the benchmark measures the system.
type randomBatches struct {
	x      []float32
	labels []int32
	batch  int
}

func newRandomBatches(seed uint64, max int) *randomBatches {
	r := rand.New(rand.NewPCG(seed, 1))
	rb := &randomBatches{x: make([]float32, max*784), labels: make([]int32, max)}
	for i := range rb.x {
		rb.x[i] = float32(r.NormFloat64())
	}
	for i := range rb.labels {
		rb.labels[i] = int32(r.IntN(10))
	}
	return rb
}

func (r *randomBatches) SetBatch(n int) { r.batch = n }
func (r *randomBatches) Next(x []float32, labels []int32) (int, bool) {
	n := min(r.batch, len(r.labels))
	copy(x, r.x[:n*784])
	copy(labels, r.labels[:n])
	return n, false
}

// BenchmarkCooperative runs a hub and two workers in this process over real
// libp2p streams (TCP on loopback, encrypted), LeNet-5, 64 samples per
// worker per iteration (fixed shares), SGD with momentum: the same setting
// as scripts/bench_ddp.py's PyTorch DDP anchor. Reports images/s from the
// first iteration to the last.
func BenchmarkCooperative(b *testing.B) {
	const perWorker, workers = 64, 2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	hh, d, threads := loopbackHub(b, ctx, workers, perWorker, uint64(b.N)+5)
	defer hh.Close()
	var started, ended time.Time
	var startIter uint64
	d.OnReady = func(rd hub.Ready) {
		for _, e := range rd.Events {
			// Time from the end of the 5th iteration: connections, the
			// Welcomes and first-use allocations are behind us then.
			if e.Kind == hub.EventMerged && e.Iteration == 4 {
				started, startIter = time.Now(), e.Iteration+1
			}
			if e.Kind == hub.EventDone {
				ended = time.Now()
			}
		}
	}
	hubErr := make(chan error, 1)
	go func() { hubErr <- d.Run(ctx) }()

	workErr, closeWorkers := startLoopbackWorkers(b, ctx, hh, workers, perWorker, threads)
	defer closeWorkers()
	b.ResetTimer()
	for range workers {
		if err := <-workErr; err != nil {
			b.Fatal(err)
		}
	}
	if err := <-hubErr; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	iters := d.Core.Iteration() - startIter
	b.ReportMetric(float64(iters*workers*perWorker)/ended.Sub(started).Seconds(), "img/s")
	b.ReportMetric(float64(ended.Sub(started).Milliseconds())/float64(iters), "ms/iter")
}

// loopbackTick is the hubs' tick in the loopback benchmarks.
const loopbackTick = 10 * time.Millisecond

// loopbackHub returns a libp2p host on loopback and a hub driver on it for
// the given number of workers of perWorker samples each and iterations
// iterations: LeNet-5, fixed shares, SGD with momentum, whole float32
// gradients. It also returns the kernel threads each trainer (the hub's and
// every worker's) gets: its share of the cores, as DDP's processes get one
// thread each (trainers on GOMAXPROCS threads apiece would have their kernel
// pools spin for the cores the others compute on). The caller closes the
// host.
func loopbackHub(tb testing.TB, ctx context.Context, workers, perWorker int, iterations uint64) (*p2p.Host, *hub.Driver, int) {
	threads := max(1, runtime.GOMAXPROCS(0)/workers)
	be := cpu.NewCPU()
	be.SetThreads(threads)
	net, err := models.Build(be, "lenet5", models.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 1)))
	tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	hh, err := p2p.NewHost(ctx, p2p.HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err != nil {
		tb.Fatal(err)
	}
	hc := hub.DefaultConfig()
	hc.ID, hc.MinWorkers, hc.MaxWorkers, hc.GlobalBatch = hh.ID(), workers, workers, workers*perWorker
	hc.Iterations, hc.Batch, hc.Tick, hc.DeadlineTicks = iterations, hub.Fixed, loopbackTick, 1000
	// Whole float32 gradients, as DDP all-reduces them: no lossy codec
	// (whatever the default), so both sides compute the same update. No
	// layer-wise overlap: LeNet-5's layers are too small to pay for a
	// message each on loopback (9.9 against 13.6 ms per iteration with it,
	// alternating runs), and DDP puts them all in one bucket too.
	hc.Compression, hc.Overlap = "none", false
	core, err := hub.NewCore(hc, hub.Model{Name: "lenet5", Config: models.Config{}, Trainer: tr})
	if err != nil {
		tb.Fatal(err)
	}
	return hh, &hub.Driver{Core: core, Trainer: tr, Listener: hh.Listen(), Tick: loopbackTick}, threads
}

// startLoopbackWorkers starts workers worker drivers in this process that
// dial hh and train on random batches of perWorker samples with threads
// kernel threads each; each one's Run error comes on the channel. The
// caller calls closeHosts once they are done.
func startLoopbackWorkers(tb testing.TB, ctx context.Context, hh *p2p.Host, workers, perWorker, threads int) (workErr <-chan error, closeHosts func()) {
	errs := make(chan error, workers)
	var hosts []*p2p.Host
	closeHosts = func() {
		for _, h := range hosts {
			h.Close()
		}
	}
	for i := range workers {
		wh, err := p2p.NewHost(ctx, p2p.HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}})
		if err != nil {
			tb.Fatal(err)
		}
		hosts = append(hosts, wh)
		conn, err := wh.Dial(ctx, hh.Addrs()[0])
		if err != nil {
			closeHosts()
			tb.Fatal(err)
		}
		wc := worker.DefaultConfig()
		wc.Name, wc.Hub = wh.ID(), conn.RemotePeer()
		wbe := cpu.NewCPU()
		wbe.SetThreads(threads)
		wcore, err := worker.NewCore(wc, wbe)
		if err != nil {
			closeHosts()
			tb.Fatal(err)
		}
		wd := &worker.Driver{Core: wcore, Conn: conn, Data: newRandomBatches(uint64(i), perWorker)}
		go func() { errs <- wd.Run(ctx) }()
	}
	return errs, closeHosts
}

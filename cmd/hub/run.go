package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/discovery"
	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/cotrain/cotrain/sync/wire"
)

// heldOut is how many test samples the --patience rule evaluates on.
const heldOut = 2000

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	log := cli.NewLogger(stderr, c.verbose)
	var ev *cli.Events
	if c.json {
		ev = cli.NewEvents(stdout)
	}
	spec, err := models.Lookup(c.model)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	mcfg := spec.Resolve(models.Config{})
	// The hub's master copy stays on the CPU backend, whatever the workers
	// use: the hub computes no gradients, it only applies each merged
	// gradient with the optimizer, and every worker applies the same step to
	// its own copy. The OpenCL optimizer kernels give the CPU's bits where the
	// device rounds division and sqrt correctly (docs/opencl.md,
	// "Determinism"); elsewhere a worker's hash differs and it resyncs.
	b := gpu.NewCPU()
	net, err := models.Build(b, c.model, mcfg)
	if err != nil {
		return err
	}
	net.InitParams(rand.New(rand.NewPCG(c.seed, 0x1217)))
	ds, err := cli.LoadData(c.dataSpec, net.In, nil, c.seed)
	if err != nil {
		return err
	}
	iterations := c.iterations
	if c.epochs > 0 {
		iterations = uint64((c.epochs*ds.Train.Len() + c.batch - 1) / c.batch)
	}
	hc := hub.DefaultConfig()
	hc.Compression, hc.Overlap = c.compress, c.overlap
	// A top-k session with SGD momentum or Adam runs it on the workers
	// (momentum or Adam correction): the nodes step with plain SGD.
	node, err := hub.ConfigureTopK(&hc, hub.NodeOptimizer{Name: c.optimizer, Momentum: c.momentum, WeightDecay: c.weightDecay, Nesterov: c.nesterov})
	if err != nil {
		return fmt.Errorf("%w: --compress: %v", errUsage, err)
	}
	opt, err := solver.NewOptimizer(b, node.Name, net.NumParams(), float32(node.Momentum), float32(node.WeightDecay), node.Nesterov)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var sched solver.Schedule = solver.Constant(float32(c.lr))
	switch c.schedule {
	case "cosine":
		if iterations > 0 {
			sched = solver.Cosine{Base: float32(c.lr), Total: int(iterations)}
		}
	case "constant":
	default:
		return fmt.Errorf("%w: --schedule %q: want cosine or constant", errUsage, c.schedule)
	}
	tr := solver.NewTrainer(net, opt, sched)
	if c.resume {
		it, planned, err := loadCheckpoint(c.out, c.model, tr)
		if err != nil {
			return err
		}
		if planned != iterations {
			log.Warn("the checkpoint was written for a run of another length: the learning-rate schedule changes",
				"checkpoint", planned, "now", iterations)
		}
		if ev != nil {
			ev.Emit("resumed", map[string]any{"iteration": it, "checkpoint": filepath.Join(c.out, checkpointName)})
		} else {
			fmt.Fprintf(stdout, "resumed from %s at iteration %d\n", filepath.Join(c.out, checkpointName), it)
		}
	}
	checkpoint := func() {
		path, err := saveCheckpoint(c.out, c.model, mcfg, tr, iterations)
		if err != nil {
			log.Error("checkpoint failed", "err", err)
			return
		}
		if ev != nil {
			ev.Emit("checkpoint", map[string]any{"iteration": tr.Iter, "path": path})
		}
	}

	hc.MinWorkers, hc.MaxWorkers, hc.GlobalBatch = c.minWorkers, max(c.maxWorkers, c.minWorkers), c.batch
	hc.Iterations, hc.Tick, hc.MaxMisses = iterations, c.tick, c.maxMisses
	hc.DeadlineTicks = hub.DriverConfig{Tick: c.tick, Deadline: c.deadline}.DeadlineTicks()
	hc.Park, hc.ParkMargin, hc.ParkProbe = c.park, c.parkMargin, c.parkProbe
	if c.allow != "" {
		if hc.Allow, err = loadAllow(c.allow); err != nil {
			return err
		}
	}
	switch c.policy {
	case "adaptive":
		hc.Batch = hub.Adaptive
	case "fixed":
		hc.Batch = hub.Fixed
	default:
		return fmt.Errorf("%w: --policy %q: want adaptive or fixed", errUsage, c.policy)
	}

	hostCfg := p2p.HostConfig{Listen: c.listen, Logger: log,
		// A push is the biggest thing a worker sends: the gradient.
		MaxFrame: 4*net.NumParams() + 1<<20}
	// The identity persists (by default in --out), so that a hub restarted
	// with --resume has the same peer id and workers can dial it again.
	idPath := c.identity
	if idPath == "" {
		idPath = filepath.Join(c.out, identityName)
	}
	if hostCfg.Identity, err = p2p.LoadOrCreateIdentity(idPath); err != nil {
		return err
	}
	if c.psk != "" {
		if hostCfg.PSK, err = p2p.LoadPSK(c.psk); err != nil {
			return err
		}
	}
	host, err := p2p.NewHost(ctx, hostCfg)
	if err != nil {
		return err
	}
	defer host.Close()
	hc.ID = host.ID()
	core, err := hub.NewCore(hc, hub.Model{Name: c.model, Config: mcfg, Trainer: tr})
	if err != nil {
		return err
	}
	ln := host.Listen()
	defer ln.Close()
	addrs := host.Addrs()
	if c.json {
		ev.Emit("listening", map[string]any{"addrs": addrs, "peer_id": host.ID(), "session": c.session, "model": c.model})
	} else {
		fmt.Fprintf(stdout, "hub %s (session %q, model %s) listening on:\n  %s\n", host.ID(), c.session, c.model, strings.Join(addrs, "\n  "))
		fmt.Fprintf(stdout, "waiting for %d workers; %d iterations of %d samples\n", c.minWorkers, iterations, c.batch)
	}
	if c.mdns {
		stopMDNS, err := discovery.Advertise(ctx, discovery.Info{Session: c.session, Model: c.model, PeerID: host.ID(), Addrs: addrs})
		if err != nil {
			log.Warn("mDNS advertising failed; workers need --hub", "err", err)
		} else {
			defer stopMDNS()
		}
	}

	p := &progress{c: c, ev: ev, out: stderr, pushed: map[string]time.Time{}, start: time.Now(), best: math.Inf(1)}
	d := &hub.Driver{Core: core, Listener: ln, Tick: c.tick, Log: log}
	val := solver.NewTrainer(net, nil, nil)
	d.OnStep = func(from string, m wire.Message) {
		if _, ok := m.(*wire.Push); ok {
			p.pushed[from] = time.Now()
		}
	}
	d.OnReady = func(rd hub.Ready) {
		for _, e := range rd.Events {
			if e.Kind == hub.EventRefused {
				p.refused++
			}
			if e.Kind == hub.EventStarted {
				p.start = time.Now() // throughput counts from the first iteration
			}
			if e.Kind != hub.EventMerged {
				continue
			}
			p.merged(e, rd)
			if c.checkpointEvery > 0 && (e.Iteration+1)%uint64(c.checkpointEvery) == 0 {
				checkpoint()
			}
			if c.patience > 0 && (e.Iteration+1)%uint64(c.evalEvery) == 0 {
				_, loss := val.Evaluate(firstN{ds.Test, heldOut}, 500)
				if p.heldOut(e.Iteration+1, loss) {
					d.RequestStop(fmt.Sprintf("converged: held-out loss has not improved for %d evaluations", c.patience))
				}
			}
		}
	}
	runErr := d.Run(ctx)
	checkpoint() // at every exit, SIGINT and SIGTERM included

	acc, testLoss := val.Evaluate(ds.Test, 500)
	path, sum, err := cli.SaveFinal(c.out, c.model, mcfg, net, tr.Iter)
	if err != nil {
		return err
	}
	result := map[string]any{"iterations": tr.Iter, "weights_sha256": sum, "weights": path,
		"test_accuracy": acc, "test_loss": testLoss, "seconds": time.Since(p.start).Seconds(),
		"samples_per_sec": float64(p.samples) / time.Since(p.start).Seconds(), "refused": p.refused,
		"compression": c.compress, "overlap": c.overlap, "bytes_up": p.bytesUp, "bytes_down": p.bytesDown,
		"bytes_up_per_iteration": perIteration(p.bytesUp, p.merges), "bytes_down_per_iteration": perIteration(p.bytesDown, p.merges)}
	if c.json {
		ev.Emit("done", result)
	} else {
		fmt.Fprintf(stdout, "done after %d iterations: test accuracy %.4f, weights %s (sha256 %s)\n", tr.Iter, acc, path, sum)
		fmt.Fprintf(stdout, "gradients (%s): %.1f kB up and %.1f kB down per iteration\n", c.compress,
			perIteration(p.bytesUp, p.merges)/1e3, perIteration(p.bytesDown, p.merges)/1e3)
	}
	return runErr
}

// firstN is the first n samples of a data set.
type firstN struct {
	solver.Samples
	n int
}

func (f firstN) Len() int { return min(f.n, f.Samples.Len()) }

// progress prints what a person watching the hub wants: iteration, loss,
// throughput, and each worker's batch and how long it waited at the barrier.
type progress struct {
	c       config
	ev      *cli.Events
	out     io.Writer
	pushed  map[string]time.Time
	start   time.Time
	samples int
	best    float64
	stale   int
	refused int // inputs the core refused (each also logged)
	// Gradient payload bytes of the iterations merged (EventMerged).
	bytesUp, bytesDown int64
	merges             int
}

// perIteration is b over n iterations (0 for none).
func perIteration(b int64, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}

func (p *progress) merged(e hub.Event, rd hub.Ready) {
	p.samples += e.Samples
	p.bytesUp, p.bytesDown, p.merges = p.bytesUp+e.BytesUp, p.bytesDown+e.BytesDown, p.merges+1
	now := time.Now()
	type w struct {
		ID     string  `json:"id"`
		Batch  int     `json:"batch"`
		WaitMS float64 `json:"wait_ms"`
	}
	var ws []w
	var sizes wire.BatchSizes
	for _, env := range rd.Messages {
		if m, ok := env.Msg.(*wire.Merged); ok {
			sizes = m.BatchSizes
			break
		}
	}
	for id, b := range sizes {
		wait := 0.0
		if t, ok := p.pushed[id]; ok {
			wait = float64(now.Sub(t).Microseconds()) / 1e3
		}
		ws = append(ws, w{short(id), b, wait})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	clear(p.pushed)
	it := e.Iteration + 1
	if it%uint64(p.c.logEvery) != 0 {
		return
	}
	rate := float64(p.samples) / now.Sub(p.start).Seconds()
	if p.ev != nil {
		p.ev.Emit("progress", map[string]any{"iteration": it, "loss": e.Loss, "lr": e.LR, "samples_per_sec": rate, "workers": ws,
			"bytes_up": e.BytesUp, "bytes_down": e.BytesDown})
		return
	}
	var parts []string
	for _, x := range ws {
		parts = append(parts, fmt.Sprintf("%s b=%d wait %.0fms", x.ID, x.Batch, x.WaitMS))
	}
	fmt.Fprintf(p.out, "iter %d loss %.4f lr %.4f %.0f img/s %.0f/%.0f kB up/down | %s\n", it, e.Loss, e.LR, rate,
		float64(e.BytesUp)/1e3, float64(e.BytesDown)/1e3, strings.Join(parts, " | "))
}

// heldOut records an evaluation and reports whether patience ran out.
func (p *progress) heldOut(iter uint64, loss float64) bool {
	if loss < p.best-1e-4 {
		p.best, p.stale = loss, 0
	} else {
		p.stale++
	}
	if p.ev != nil {
		p.ev.Emit("eval", map[string]any{"iteration": iter, "heldout_loss": loss, "best": p.best, "stale": p.stale})
	} else {
		fmt.Fprintf(p.out, "iter %d held-out loss %.4f (best %.4f, %d without improvement)\n", iter, loss, p.best, p.stale)
	}
	return p.stale >= p.c.patience
}

// short abbreviates a libp2p peer id for progress lines.
func short(id string) string {
	if len(id) > 10 {
		return "…" + id[len(id)-6:]
	}
	return id
}

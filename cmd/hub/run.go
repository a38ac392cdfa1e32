package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/cmd/internal/peer"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/hub/runspec"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/discovery"
	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/cotrain/cotrain/watch"
	"github.com/cotrain/cotrain/watch/web"
)

// heldOut is how many test samples the --patience rule evaluates on.
const heldOut = 2000

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	log := cli.NewLogger(stderr, c.verbose)
	// Every event goes through one bus (watch.Bus): JSON lines, the
	// progress lines and the dashboard are its sinks, and the driver only
	// ever publishes to it, never waits on it.
	bus := &watch.Bus{}
	defer bus.Close()
	if c.json {
		bus.Attach(1<<14, jsonSink(stdout, c.logEvery))
	} else {
		bus.Attach(1<<10, textSink(stderr, c.logEvery))
	}
	var rec *watch.Recorder
	if c.http != "" {
		rec = watch.NewRecorder("hub", bus)
	}
	// The hub's master copy stays on the CPU backend, whatever the workers
	// use: the hub computes no gradients, it only applies each merged
	// gradient with the optimizer, and every worker applies the same step to
	// its own copy. The OpenCL optimizer kernels give the CPU's bits where the
	// device rounds division and sqrt correctly (docs/opencl.md,
	// "Determinism"); elsewhere a worker's hash differs and it resyncs.
	b := cpu.NewCPU()
	m, ds, err := loadModel(c, b, stderr)
	if err != nil {
		return err
	}
	net, mcfg := m.Trainer.Net, m.Config
	iterations := c.iterations
	if c.epochs > 0 {
		iterations = uint64((c.epochs*ds.Train.Len() + c.batch - 1) / c.batch)
	}
	spec, err := c.spec(iterations)
	if err != nil {
		return err
	}
	spec.Model, spec.ModelConfig, spec.Meta = m.Name, m.Config, m.Meta
	// A top-k session with SGD momentum or Adam runs it on the workers
	// (momentum or Adam correction): the nodes step with plain SGD.
	rn, err := spec.Build(b, net)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	tr := rn.Trainer
	if c.resume {
		if err := checkClasses(c.out, m.Meta); err != nil {
			return err
		}
		it, planned, err := loadCheckpoint(c.out, m.Name, tr)
		if err != nil {
			return err
		}
		if planned != iterations {
			log.Warn("the checkpoint was written for a run of another length: the learning-rate schedule changes",
				"checkpoint", planned, "now", iterations)
		}
		bus.Publish("resumed", map[string]any{"iteration": it, "checkpoint": filepath.Join(c.out, checkpointName)})
		if !c.json {
			fmt.Fprintf(stdout, "resumed from %s at iteration %d\n", filepath.Join(c.out, checkpointName), it)
		}
	}
	checkpoint := func() {
		path, err := saveCheckpoint(c.out, m.Name, mcfg, m.Meta, tr, iterations)
		if err != nil {
			log.Error("checkpoint failed", "err", err)
			return
		}
		bus.Publish(watch.KindCheckpoint, map[string]any{"iteration": tr.Iter, "path": path})
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
	host, err := peer.NewHost(ctx, hostCfg, idPath, c.psk)
	if err != nil {
		return err
	}
	defer host.Close()
	core, err := rn.Core(host.ID())
	if err != nil {
		return err
	}
	ln := host.Listen()
	defer ln.Close()
	addrs := host.Addrs()
	shown := models.DisplayName(m.Name, m.Meta) // an imported model by its file's name
	bus.Publish("listening", &watch.Session{Role: "hub", Name: c.session, Model: shown, Policy: c.policy, Codec: c.compress,
		PeerID: host.ID(), Addrs: addrs, Batch: c.batch, Iterations: iterations, MinWorkers: c.minWorkers, Iteration: uint64(tr.Iter),
		Classes: ds.Labels, Params: net.NumParams(), Trainable: net.NumTrainable(), Vocab: vocabSize(ds)})
	if rec != nil {
		url, stop, err := web.Serve(rec, c.http, log)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		defer stop()
		bus.Publish("http", map[string]any{"url": url})
		if !c.json {
			fmt.Fprintf(stdout, "dashboard: %s\n", url)
		}
	}
	if !c.json {
		fmt.Fprintf(stdout, "hub %s (session %q, model %s) listening on:\n  %s\n", host.ID(), c.session, shown, strings.Join(addrs, "\n  "))
		if ds.Kind == cli.KindText {
			fmt.Fprintf(stdout, "vocabulary: %d words (sent to every worker), context %d words; %d of %d parameters train\n",
				ds.Vocab.Len(), net.In.W, net.NumTrainable(), net.NumParams())
		} else {
			fmt.Fprintf(stdout, "classes: %s; %d of %d parameters train\n", strings.Join(ds.Labels, ", "), net.NumTrainable(), net.NumParams())
		}
		fmt.Fprintf(stdout, "evaluating on %s: %s\n", c.dataSpec, evalPart(ds))
		fmt.Fprintf(stdout, "waiting for %d workers; %d iterations of %d samples\n", c.minWorkers, iterations, c.batch)
	}
	if c.mdns {
		stopMDNS, err := discovery.Advertise(ctx, discovery.Info{Session: c.session, Model: shown, PeerID: host.ID(), Addrs: addrs})
		if err != nil {
			log.Warn("mDNS advertising failed; workers need --hub", "err", err)
		} else {
			defer stopMDNS()
		}
	}

	stop := hub.NewStopper(spec.Stop)
	p := &progress{c: c, bus: bus, start: time.Now(), stop: stop}
	d := &hub.Driver{Core: core, Trainer: tr, Listener: ln, Tick: c.tick, Log: log, Watch: bus}
	val := solver.NewTrainer(net, nil, nil)
	// With a dashboard and no --patience, test accuracy is measured on a
	// copy of the weights, off the driver's goroutine.
	var ev *evaluator
	if rec != nil && c.patience == 0 {
		ev, err = newEvaluator(m.Name, mcfg, m.Meta, ds)
		if err != nil {
			return err
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
			p.merged(e)
			if c.checkpointEvery > 0 && (e.Iteration+1)%uint64(c.checkpointEvery) == 0 {
				checkpoint()
			}
			if c.patience > 0 && stop.Due(e.Iteration+1) {
				acc, loss := val.Evaluate(firstN{ds.Test, heldOut}, 500)
				if why := p.heldOut(e.Iteration+1, acc, loss); why != "" {
					d.RequestStop(why)
				}
			}
			if ev != nil && stop.Due(e.Iteration+1) {
				ev.snapshot(ctx, bus, tr.Net, e.Iteration+1)
			}
		}
	}
	runErr := d.Run(ctx)
	checkpoint() // at every exit, SIGINT and SIGTERM included

	acc, testLoss := val.Evaluate(ds.Test, 500)
	var ppl cli.Perplexity
	if ds.Kind == cli.KindText {
		if ppl, err = cli.EvalText(val, ds.Test, 500); err != nil {
			return err
		}
	}
	path, sum, err := cli.SaveFinal(c.out, m.Name, mcfg, m.Meta, net, tr.Iter)
	if err != nil {
		return err
	}
	result := map[string]any{"iterations": tr.Iter, "weights_sha256": sum, "weights": path,
		"test_accuracy": acc, "test_loss": testLoss, "test_samples": ds.Test.Len(), "seconds": time.Since(p.start).Seconds(),
		"samples_per_sec": float64(p.samples) / time.Since(p.start).Seconds(), "refused": p.refused,
		"compression": c.compress, "overlap": c.overlap, "bytes_up": p.bytesUp, "bytes_down": p.bytesDown,
		"bytes_up_per_iteration": perIteration(p.bytesUp, p.merges), "bytes_down_per_iteration": perIteration(p.bytesDown, p.merges)}
	if ds.Kind == cli.KindText {
		result["test_perplexity"], result["unigram_perplexity"] = ppl.Perplexity, ppl.Unigram
	}
	if c.json {
		bus.Publish("done", result)
		bus.Close() // the last line out
	} else {
		bus.Close()
		if ds.Kind == cli.KindText {
			fmt.Fprintf(stdout, "done after %d iterations: test perplexity %.2f (the best unigram model of the same words: %.2f), next-word accuracy %.4f, weights %s (sha256 %s)\n",
				tr.Iter, ppl.Perplexity, ppl.Unigram, acc, path, sum)
		} else {
			fmt.Fprintf(stdout, "done after %d iterations: test accuracy %.4f, weights %s (sha256 %s)\n", tr.Iter, acc, path, sum)
		}
		fmt.Fprintf(stdout, "gradients (%s): %.1f kB up and %.1f kB down per iteration\n", c.compress,
			perIteration(p.bytesUp, p.merges)/1e3, perIteration(p.bytesDown, p.merges)/1e3)
	}
	return runErr
}

// spec maps the flags onto the run's spec (runspec), for a run of
// iterations (0: until stopped); the model is loadModel's to fill in.
func (c config) spec(iterations uint64) (runspec.Spec, error) {
	s := runspec.Default()
	s.Optimizer = runspec.Optimizer{Name: c.optimizer, LR: c.lr, Momentum: c.momentum, WeightDecay: c.weightDecay, Nesterov: c.nesterov}
	switch c.schedule {
	case "cosine", "constant":
		s.Schedule = runspec.Schedule{Name: c.schedule}
	default:
		return s, fmt.Errorf("%w: --schedule %q: want cosine or constant", errUsage, c.schedule)
	}
	s.Stop = hub.StopRule{Iterations: iterations, EvalEvery: c.evalEvery, Patience: c.patience}
	s.GlobalBatch, s.MinWorkers, s.MaxWorkers = c.batch, c.minWorkers, max(c.maxWorkers, c.minWorkers)
	switch c.policy {
	case "adaptive":
		s.Policy.Batch = hub.Adaptive
	case "fixed":
		s.Policy.Batch = hub.Fixed
	case "energy":
		s.Policy.Batch, s.Policy.EnergySlack = hub.Energy, c.energySlack
	default:
		return s, fmt.Errorf("%w: --policy %q: want adaptive, fixed or energy", errUsage, c.policy)
	}
	s.Policy.Park, s.Policy.ParkMargin, s.Policy.ParkProbe = c.park, c.parkMargin, c.parkProbe
	s.Policy.BatteryFloor = c.batteryFloor
	s.Codec = runspec.Codec{Compression: c.compress, Overlap: c.overlap}
	s.Deadline = runspec.Deadline{Tick: c.tick, Max: c.deadline, Floor: c.deadlineFloor, Factor: c.deadlineFactor, MaxMisses: c.maxMisses}
	if c.allow != "" {
		var err error
		if s.Allow, err = loadAllow(c.allow); err != nil {
			return s, err
		}
	}
	return s, nil
}

// loadModel makes the hub's master network on b and loads its evaluation
// data: the built-in --model, initialised from --seed, or the model of
// --weights (a weight file, or an ONNX model imported as cotrain import
// does), frozen as --train-last says. The data's classes size the head: a
// file's head that does not fit them is replaced by a freshly initialised
// one (drawn from --seed, so a resumed hub draws the same), and stderr says
// so. The returned Model has no Trainer's optimizer yet: only its Net.
func loadModel(c config, b gpu.Backend, stderr io.Writer) (hub.Model, *cli.Data, error) {
	if c.weights == "" {
		if _, err := models.Lookup(c.model); err != nil {
			return hub.Model{}, nil, fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	// Holdout 0: the hub's --data is evaluation data, all of it used.
	s, err := cli.PrepareModel(cli.ModelFlags{Weights: c.weights, Model: c.model, Normalize: c.normalize,
		TrainLast: c.trainLast, Width: c.width, Data: c.dataSpec, Seed: c.seed, MaxPixels: c.maxPixels, Window: c.window, Stride: c.stride,
		Vocab: c.vocab, Context: c.context, Say: "hub: "}, b, stderr)
	if err != nil {
		return hub.Model{}, nil, err
	}
	meta := models.DefiningMeta(s.Data.ModelMeta(s.File.Meta, s.Norm))
	return hub.Model{Name: s.File.Model, Config: s.File.Config, Meta: meta, Trainer: &solver.Trainer{Net: s.Net}}, s.Data, nil
}

// vocabSize is the vocabulary size of text data, 0 for other data.
func vocabSize(ds *cli.Data) int {
	if ds.Vocab == nil {
		return 0
	}
	return ds.Vocab.Len()
}

// evalPart says which part of the hub's --data it evaluates on: all of an
// image folder, or the test part of data that comes split.
func evalPart(ds *cli.Data) string {
	if ds.Test == ds.Train {
		return ds.Split
	}
	return fmt.Sprintf("the %d test images of %s", ds.Test.Len(), ds.Split)
}

// firstN is the first n samples of a data set.
type firstN struct {
	solver.Samples
	n int
}

func (f firstN) Len() int { return min(f.n, f.Samples.Len()) }

// progress keeps the run's totals for the final result and the --patience
// rule's state; what is shown while the run goes is published on the bus.
type progress struct {
	c       config
	bus     *watch.Bus
	start   time.Time
	samples int
	stop    *hub.Stopper // the run's stop rule: --patience on the held-out loss
	refused int          // inputs the core refused (each also logged)
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

func (p *progress) merged(e hub.Event) {
	p.samples += e.Samples
	p.bytesUp, p.bytesDown, p.merges = p.bytesUp+e.BytesUp, p.bytesDown+e.BytesDown, p.merges+1
}

// heldOut records an evaluation with the run's stop rule, publishes it,
// and returns why the run should stop ("" to go on).
func (p *progress) heldOut(iter uint64, acc, loss float64) string {
	why := p.stop.Observe(acc, loss)
	best, stale := p.stop.Best(), p.stop.Stale()
	p.bus.Publish(watch.KindEval, &watch.Eval{Iteration: iter, Samples: heldOut, Loss: loss, Accuracy: acc, Best: &best, Stale: &stale})
	return why
}

// short abbreviates a libp2p peer id for progress lines.
func short(id string) string {
	if len(id) > 10 {
		return "…" + id[len(id)-6:]
	}
	return id
}

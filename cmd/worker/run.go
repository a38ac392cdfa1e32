package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/cmd/internal/peer"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu"
	_ "github.com/cotrain/cotrain/gpu/cpu" // the driver "cpu" (--device cpu, and auto without a GPU)
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/discovery"
	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/watch"
	"github.com/cotrain/cotrain/watch/web"
	"github.com/cotrain/cotrain/worker"
	"github.com/libp2p/go-libp2p/core/network"
)

func run(ctx context.Context, c config, stdout, stderr io.Writer) error {
	log := cli.NewLogger(stderr, c.verbose)
	start := time.Now()
	// Every event goes through one bus, as on the hub: JSON lines, the
	// progress lines and the dashboard are its sinks; publishing never
	// blocks the session.
	bus := &watch.Bus{}
	defer bus.Close()
	if c.json {
		bus.Attach(1<<12, jsonSink(stdout, c.logEvery))
	} else {
		bus.Attach(1<<10, textSink(stderr, c.logEvery, start))
	}
	var rec *watch.Recorder
	if c.http != "" {
		rec = watch.NewRecorder("worker", bus)
	}
	si, sn, err := data.ParseShard(c.shard)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	// The backend is opened before anything is dialled, so that a bad
	// --device fails fast; its Name goes into the Register message. Its
	// optimizer steps match the hub's CPU bit for bit on devices with
	// correctly rounded division and sqrt; on others Adam may differ in the
	// last bit, the weight hash then differs and this worker resyncs
	// (docs/opencl.md, "Determinism").
	opts, err := cli.OpenOptions(gpu.OpenOptions{Log: log}, os.LookupEnv)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	b, err := gpu.Open(c.device, opts)
	if errors.Is(err, gpu.ErrDeviceSpec) {
		return fmt.Errorf("%w: --device: %w", errUsage, err)
	}
	if err != nil {
		return fmt.Errorf("--device %s: %w", c.device, err)
	}
	if cl, ok := b.(io.Closer); ok {
		defer cl.Close()
	}

	// Every file of the data set is read and decoded before this worker
	// dials the hub: a broken photo stops it here, named, instead of after
	// it has registered and the run counts on it. The model (and so the
	// size images are resized to) is not known yet: the shard is loaded
	// for real after the Welcome.
	if !c.json {
		fmt.Fprintf(stderr, "checking the data set %s\n", c.dataSpec)
	}
	var bar io.Writer
	if !c.json {
		bar = stderr
	}
	if err := cli.CheckData(c.dataSpec, c.maxPixels, bar); err != nil {
		return fmt.Errorf("%w; not joining", err)
	}

	host, err := peer.NewHost(ctx, p2p.HostConfig{Listen: c.listen, Logger: log}, c.identity, c.psk)
	if err != nil {
		return err
	}
	defer host.Close()

	addrs := []string{c.hubAddr}
	if c.hubAddr == "" {
		info, err := discovery.Find(ctx, c.session, discovery.WithWindow(c.find))
		if err != nil {
			return fmt.Errorf("no --hub given and mDNS found none: %w", err)
		}
		// Every advertised address is dialled: which ones this device
		// can reach depends on the networks it shares with the hub.
		addrs = info.Addrs
		log.Info("found hub over mDNS", "session", info.Session, "model", info.Model, "addrs", addrs)
	}
	addr := strings.Join(addrs, " ")
	// libp2p backs an address that failed off for seconds to minutes; the
	// session has a backoff of its own, so every dial is forced.
	dial := func(ctx context.Context) (transport.Conn, error) {
		return host.DialAny(network.WithForceDirectDial(ctx, "cotrain redial"), addrs)
	}

	wc := worker.DefaultConfig()
	wc.Name, wc.Device, wc.Backend, wc.Shard = host.ID(), c.name, b.Name(), c.shard
	if c.computeWatts > 0 || c.radioWatts > 0 {
		// What a hub with --policy energy weighs (hub/energy.go).
		wc.Info = map[string]string{
			wire.InfoComputeWatts: strconv.FormatFloat(c.computeWatts, 'g', -1, 64),
			wire.InfoRadioWatts:   strconv.FormatFloat(c.radioWatts, 'g', -1, 64),
		}
	}
	// The class list goes into the Register (the hub refuses a worker
	// whose classes differ from its model's); it needs only the folder
	// names, so it is read before the model is known.
	if wc.Classes, err = cli.DataLabels(c.dataSpec); err != nil {
		return err
	}
	// The shard is loaded once the Welcome says which model (and so which
	// input shape) the run trains: until then the data source is lazy.
	src := &lazyShard{spec: c.dataSpec, i: si, n: sn, seed: c.seed + uint64(si), maxPixels: c.maxPixels,
		window: c.window, stride: c.stride}
	sess := &worker.Session{Config: wc, Backend: b, Data: src, Dial: dial, Log: log,
		Backoff: worker.DefaultDriverConfig().Backoff, ReconnectTimeout: c.reconnect,
		Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), c.seed)), Slowdown: c.slowdown}
	if c.powerSupply != "" {
		ps := worker.PowerSupply{Dir: c.powerSupply}
		if bat, err := ps.Read(); err != nil {
			log.Info("no battery to report", "power_supply", c.powerSupply, "err", err)
		} else {
			log.Info("battery", "power_supply", c.powerSupply, "level", bat.String())
			sess.Battery, sess.BatteryEvery = ps.Read, c.batteryEvery
		}
	}
	obs := newObserver(bus, watch.Session{Role: "worker", Hub: addr, WorkerName: c.name, Backend: b.Name()})
	first := obs.session // a copy: the observer goes on filling in its own
	bus.Publish("session", &first)
	if rec != nil {
		url, stop, err := web.Serve(rec, c.http, log)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		defer stop()
		bus.Publish("http", map[string]any{"url": url})
		if !c.json {
			fmt.Fprintf(stderr, "dashboard: %s\n", url)
		}
	}
	sess.OnConnect = func(n int) {
		bus.Publish("connected", map[string]any{"hub": addr, "reconnect": n})
	}
	var pushes int
	sess.OnReady = func(core *worker.Core, rd worker.Ready) {
		for _, e := range rd.Events {
			switch e.Kind {
			case worker.EventWelcomed:
				if err := src.load(core); err != nil {
					log.Error("cannot load the data for this model", "err", err)
				}
			case worker.EventPushed:
				pushes++
			}
		}
		obs.ready(core, rd)
	}
	runErr := sess.Run(ctx)
	core := sess.Core()
	if core == nil {
		return runErr // the first dial failed
	}
	if src.err != nil {
		return src.err
	}
	weights, st := core.Final()
	if runErr != nil || weights == nil {
		if runErr == nil {
			runErr = fmt.Errorf("the session ended without final weights")
		}
		return runErr
	}
	tr := core.Trainer()
	if err := state.CheckFinite("final weights", weights); err != nil {
		return err
	}
	if len(weights) != tr.Net.Params.Len() || len(st) != tr.Net.State.Len() {
		return fmt.Errorf("final weights of %d/%d values for a model of %d/%d", len(weights), len(st), tr.Net.Params.Len(), tr.Net.State.Len())
	}
	tr.Net.B.Upload(tr.Net.Params, weights)
	tr.Net.B.Upload(tr.Net.State, st)
	tr.Net.ParamsChanged()
	path, sum, err := cli.SaveFinal(c.out, src.model, src.mcfg, src.meta, tr.Net, int(core.FinalIteration()))
	if err != nil {
		return err
	}
	result := map[string]any{"iterations": core.FinalIteration(), "weights_sha256": sum, "weights": path,
		"pushes": pushes, "mismatches": core.Mismatches(), "seconds": time.Since(start).Seconds()}
	if c.json {
		bus.Publish("done", result)
		bus.Close() // the last line out
		return nil
	}
	bus.Close()
	fmt.Fprintf(stdout, "done after %d iterations (%d pushes): weights %s (sha256 %s)\n", core.FinalIteration(), pushes, path, sum)
	return nil
}

// lazyShard is the worker's shard of the training data, loaded when the
// hub's Welcome has fixed the model.
type lazyShard struct {
	spec      string
	i, n      int
	seed      uint64
	maxPixels int // the largest image read (--max-pixels)
	// window and stride are --window and --stride (0: the model's).
	window, stride int
	loader         *data.Loader
	batch          int
	err            error
	model          string
	mcfg           models.Config
	meta           [][2]string
	loadedOnce     bool
}

func (s *lazyShard) load(core *worker.Core) error {
	if s.loadedOnce {
		return s.err
	}
	s.loadedOnce = true
	tr := core.Trainer()
	s.model, s.mcfg, s.meta = core.Model()
	if done, err := s.loadText(tr); done || err != nil {
		s.err = err
		return err
	}
	// The model's normalisation (its file's, sent with the Welcome) applies
	// to this worker's inputs as to the hub's.
	norm, _, err := models.InputNorm(s.meta, tr.Net.In.C)
	if err != nil {
		s.err = err
		return err
	}
	// Sensor windows are cut as the hub's were: the window is the model's
	// input length (LoadData refuses another --window), the stride the
	// one the hub's meta records.
	sig, isSig, err := models.SignalsOf(s.meta, tr.Net.In.C)
	if err != nil {
		s.err = err
		return err
	}
	stride := s.stride
	if isSig {
		if stride != 0 && stride != sig.Stride {
			s.err = fmt.Errorf("worker: --stride %d, but the hub cuts its windows every %d steps: give --stride %d or leave it out", stride, sig.Stride, sig.Stride)
			return s.err
		}
		stride = sig.Stride
	}
	// A worker trains on all of its data (holdout 0): the hub evaluates.
	ds, err := cli.LoadData(s.spec, cli.DataOptions{Input: tr.Net.In, Norm: norm, Seed: s.seed, MaxPixels: s.maxPixels,
		Window: s.window, Stride: stride})
	if err != nil {
		s.err = err
		return err
	}
	if isSig && !cli.SameChannels(ds.Signals.Channels, sig.Channels) {
		s.err = fmt.Errorf("worker: data %s has channels %v, but the hub's model takes %v: give recordings of the hub's channels, in its order (or without a header)",
			s.spec, ds.Signals.Channels, sig.Channels)
		return s.err
	}
	shard, err := data.Shard(ds.Train, s.i, s.n)
	if err != nil {
		s.err = err
		return err
	}
	s.loader = data.NewLoader(shard, max(s.batch, 1), s.seed, true)
	return nil
}

// loadText loads a worker's text for a language model: through the
// vocabulary the hub sent with the model (models.MetaVocab; words it lacks
// become <unk>), and the worker's shard is a part of every file
// (data.Text.Part), not windows of all of it. done is false, with no
// error, when neither the data nor the model is text.
func (s *lazyShard) loadText(tr *solver.Trainer) (done bool, err error) {
	vocab, err := models.Vocab(s.meta, tr.Net.Out.Size())
	if err != nil {
		return true, fmt.Errorf("worker: the hub's model: %w", err)
	}
	kind, err := cli.KindOf(s.spec)
	if err != nil {
		return true, err
	}
	switch {
	case vocab == nil && kind != cli.KindText:
		return false, nil
	case vocab == nil:
		return true, fmt.Errorf("worker: data %s is text, but the hub trains %s, which is not a language model", s.spec, models.DisplayName(s.model, s.meta))
	case kind != cli.KindText:
		return true, fmt.Errorf("worker: the hub trains a language model, but data %s holds %s: give text (a .txt file or a folder of them)", s.spec, kind)
	}
	ds, err := cli.LoadData(s.spec, cli.DataOptions{Input: tr.Net.In, Vocab: vocab})
	if err != nil {
		return true, err
	}
	part, err := ds.Train.(*data.Text).Part(s.i, s.n)
	if err != nil {
		return true, err
	}
	s.loader = data.NewLoader(part, max(s.batch, 1), s.seed, true)
	return true, nil
}

// SetBatch implements worker.Batches.
func (s *lazyShard) SetBatch(n int) {
	s.batch = n
	if s.loader != nil {
		s.loader.SetBatch(n)
	}
}

// Next implements worker.Batches. Without data (the load failed) it fills
// nothing and reports one zero sample, which the hub refuses; the driver
// then ends on s.err.
func (s *lazyShard) Next(x []float32, labels []int32) (int, bool) {
	if s.loader == nil {
		return 0, false
	}
	return s.loader.Next(x, labels)
}

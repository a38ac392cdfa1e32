package hub_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestCompressedTraining runs every codec with and without layer-wise
// overlap (parts pushed by Computed, or one by one with PartDone) through
// a deadline that a silent worker misses and a worker that joins mid-run.
// The harness checks at every round that each worker at the hub's
// iteration holds the hub's weights bit for bit: with a lossy codec that
// holds only if the hub steps with the very values its payload decodes to.
func TestCompressedTraining(t *testing.T) {
	type mode struct {
		codec    string
		overlap  bool
		partwise bool
	}
	var modes []mode
	for _, c := range []string{"none", "fp16", "int8", "topk:0.05"} {
		modes = append(modes, mode{c, false, false}, mode{c, true, false}, mode{c, true, true})
	}
	rawUp := map[bool]int64{} // overlap → bytes up per worker without compression
	for _, md := range modes {
		t.Run(fmt.Sprintf("%s/overlap=%v/partwise=%v", md.codec, md.overlap, md.partwise), func(t *testing.T) {
			cfg := trainConfig(2, 8)
			cfg.Compression, cfg.Overlap = md.codec, md.overlap
			cfg.DeadlineTicks = 5
			h := newHubCore(t, cfg, 3)
			ds := synthetic(t, 300)
			n := newNet(t, h, ds, 2)
			for _, nd := range n.nodes {
				nd.partwise = md.partwise
			}
			slow := n.byID["w1"]
			slow.silent = true
			n.run(func() bool { return n.count(hub.EventLate) > 0 })
			slow.silent = false
			n.compute(slow, *slow.stalled) // too late: refused as stale
			n.run(func() bool { return h.Iteration() >= 3 })
			joiner := n.addNode(ds, 2, 3)
			joiner.partwise = md.partwise
			n.finish()

			for _, err := range n.hubErrs {
				if !errors.Is(err, hub.ErrStale) {
					t.Errorf("refusal %v", err)
				}
			}
			for _, name := range []string{"w0", "w1", "w2"} {
				if !slices.Contains(n.checked[name], 8) {
					t.Errorf("%s hash checked at %v, want through 8", name, n.checked[name])
				}
			}
			var up, down int64 // per worker, in iteration 1
			for _, e := range n.events {
				if e.Kind == hub.EventMerged && e.Iteration == 1 {
					up, down = e.BytesUp/int64(e.Workers), e.BytesDown
				}
			}
			if up <= 0 || down <= 0 {
				t.Fatalf("iteration 1 reported %d bytes up, %d down", up, down)
			}
			if md.codec == "none" {
				rawUp[md.overlap] = up
				if params := int64(h.Trainer().Net.NumParams()); up != 4*params {
					t.Errorf("raw bytes up %d per worker, want %d floats", up, params)
				}
			} else if want := map[string]float64{"fp16": 1.99, "int8": 3.9, "topk:0.05": 5}[md.codec]; float64(rawUp[md.overlap])/float64(up) < want {
				t.Errorf("%s sends %d bytes up, raw %d: less than %vx fewer", md.codec, up, rawUp[md.overlap], want)
			}
		})
	}
}

// TestPushRefusals: pushes that do not match the session's codec or parts
// are refused whole, with errors that say why.
func TestPushRefusals(t *testing.T) {
	cfg := trainConfig(1, 3)
	cfg.Compression, cfg.Overlap = "int8", true
	h := newHubCore(t, cfg, 3)
	if err := h.Step("w0", &wire.Register{}); err != nil {
		t.Fatal(err)
	}
	var sess wire.Session
	for _, e := range h.Ready().Messages {
		if w, ok := e.Msg.(*wire.Welcome); ok {
			sess = w.Session
		}
	}
	h.Advance()
	if sess.Compression != "int8" || len(sess.Parts) != len(hub.PartBounds(h.Trainer().Net)) || len(sess.Parts) < 2 {
		t.Fatalf("session %q parts %v", sess.Compression, sess.Parts)
	}
	n := h.Trainer().Net.NumParams()
	size := func(j int) int {
		if j+1 < len(sess.Parts) {
			return sess.Parts[j+1] - sess.Parts[j]
		}
		return n - sess.Parts[j]
	}
	last := len(sess.Parts) - 1
	good := func(j int) *wire.Push {
		return &wire.Push{Samples: 32, Part: j, Enc: compress.Int8{}.Append(nil, make([]float32, size(j)))}
	}
	for _, tt := range []struct {
		name string
		m    *wire.Push
		err  error
	}{
		{"part out of range", &wire.Push{Samples: 32, Part: last + 1}, hub.ErrBadPart},
		{"negative part", &wire.Push{Samples: 32, Part: -1}, hub.ErrBadPart},
		{"raw floats", &wire.Push{Samples: 32, Part: last, Gradient: make(wire.Floats, size(last))}, hub.ErrBadPayload},
		{"another codec", &wire.Push{Samples: 32, Part: last, Enc: compress.Float16{}.Append(nil, make([]float32, size(last)))}, hub.ErrBadPayload},
		{"wrong length", &wire.Push{Samples: 32, Part: last, Enc: compress.Int8{}.Append(nil, make([]float32, size(last)+1))}, hub.ErrBadLength},
		{"garbage", &wire.Push{Samples: 32, Part: last, Enc: []byte{3}}, hub.ErrBadPayload},
	} {
		if err := h.Step("w0", tt.m); !errors.Is(err, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	before := state.NetHash(h.Trainer().Net)
	if err := h.Step("w0", good(last)); err != nil {
		t.Fatal(err)
	}
	if err := h.Step("w0", good(last)); !errors.Is(err, hub.ErrDuplicate) {
		t.Errorf("second push of a part: %v, want ErrDuplicate", err)
	}
	m := good(0)
	m.Samples = 31
	if err := h.Step("w0", m); !errors.Is(err, hub.ErrBadSamples) {
		t.Errorf("a part with another sample count: %v, want ErrBadSamples", err)
	}
	// With one member, a part it pushed goes out ahead at once.
	var partials []int
	for _, e := range h.Ready().Messages {
		if m, ok := e.Msg.(*wire.Merged); ok && m.Partial {
			partials = append(partials, m.Part)
		}
	}
	h.Advance()
	if !slices.Equal(partials, []int{last}) || state.NetHash(h.Trainer().Net) != before || h.Iteration() != 0 {
		t.Errorf("partials %v, iteration %d: want part %d sent ahead and no step yet", partials, h.Iteration(), last)
	}
	for j := last - 1; j >= 0; j-- {
		if err := h.Step("w0", good(j)); err != nil {
			t.Fatal(err)
		}
	}
	if h.Iteration() != 1 {
		t.Errorf("hub at %d after every part, want 1", h.Iteration())
	}
}

// TestMomentumCorrection: ConfigureTopK moves SGD's momentum onto the
// workers of a top-k session only; the config and the core refuse what
// would make nodes disagree; and a run with momentum correction, a
// top-k minimum and a warm-up keeps every worker's weights equal to the
// hub's, a joiner included.
func TestMomentumCorrection(t *testing.T) {
	for _, c := range []struct {
		codec, opt    string
		nesterov      bool
		node, worker  float64
		topkMin, warm int
	}{
		{"topk:0.01", "sgd", false, 0, 0.9, hub.TopKMinValues, hub.TopKWarmupIterations},
		{"topk:0.01", "sgd", true, 0.9, 0, hub.TopKMinValues, hub.TopKWarmupIterations},
		{"topk:0.01", "adam", false, 0.9, 0, hub.TopKMinValues, hub.TopKWarmupIterations},
		{"fp16", "adam", false, 0.9, 0, 0, 0},
		{"int8", "sgd", false, 0.9, 0, 0, 0},
		{"none", "sgd", false, 0.9, 0, 0, 0},
	} {
		cfg := hub.DefaultConfig()
		cfg.Compression = c.codec
		node, err := hub.ConfigureTopK(&cfg, hub.NodeOptimizer{Name: c.opt, Momentum: 0.9, WeightDecay: 0.001, Nesterov: c.nesterov})
		wantName, wantDecay := c.opt, 0.001
		if err != nil || node.Name != wantName || node.Momentum != c.node || node.WeightDecay != wantDecay || node.Nesterov != c.nesterov ||
			float64(cfg.WorkerMomentum) != float64(float32(c.worker)) || cfg.TopKMin != c.topkMin || cfg.TopKWarmup != uint64(c.warm) {
			t.Errorf("%+v: node %+v, config %v %v %v, %v", c, node, cfg.WorkerMomentum, cfg.TopKMin, cfg.TopKWarmup, err)
		}
		if cfg.WorkerBeta2 != 0 || cfg.WorkerEps != 0 || cfg.WorkerWeightDecay != 0 {
			t.Errorf("%+v: Adam correction β2 %v, ε %v, decay %v, want off", c, cfg.WorkerBeta2, cfg.WorkerEps, cfg.WorkerWeightDecay)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	cfg := hub.DefaultConfig()
	cfg.Compression = "zip"
	if _, err := hub.ConfigureTopK(&cfg, hub.NodeOptimizer{Name: "sgd", Momentum: 0.9}); !errors.Is(err, hub.ErrConfig) {
		t.Errorf("ConfigureTopK with compression zip: %v", err)
	}
	for _, bad := range []func(*hub.Config){
		func(c *hub.Config) { c.Compression, c.WorkerMomentum = "int8", 0.9 },
		func(c *hub.Config) { c.Compression, c.WorkerMomentum = "topk", 1 },
		func(c *hub.Config) { c.Compression, c.TopKMin = "fp16", 16 },
		func(c *hub.Config) { c.Compression, c.TopKWarmup = "none", 5 },
		func(c *hub.Config) { c.Compression, c.TopKMin = "topk", -1 },
		func(c *hub.Config) { c.Compression, c.WorkerBeta2, c.WorkerEps = "int8", 0.999, 1e-8 },
		func(c *hub.Config) { c.Compression, c.WorkerBeta2, c.WorkerEps = "topk", 1, 1e-8 },
		func(c *hub.Config) { c.Compression, c.WorkerBeta2, c.WorkerEps = "topk", 0.999, 0 },
		func(c *hub.Config) { c.Compression, c.WorkerEps = "topk", 1e-8 },
		func(c *hub.Config) {
			c.Compression, c.WorkerBeta2, c.WorkerEps, c.WorkerWeightDecay = "topk", 0.999, 1e-8, -1
		},
	} {
		c := hub.DefaultConfig()
		bad(&c)
		if err := c.Validate(); !errors.Is(err, hub.ErrConfig) {
			t.Errorf("config %+v accepted: %v", c, err)
		}
	}

	// newHubCore's optimizer has momentum 0.9: the nodes would apply it
	// on top of the workers'.
	cfg = trainConfig(2, 8)
	cfg.Compression, cfg.WorkerMomentum = "topk:0.05", 0.9
	b := cpu.NewCPU()
	m, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newTestCore(cfg, hub.Model{Name: "lenet5", Trainer: solver.NewTrainer(m, solver.NewSGD(b, m.NumParams(), 0.9, 0, false), solver.Constant(0.05))}); !errors.Is(err, hub.ErrConfig) {
		t.Errorf("WorkerMomentum with node momentum 0.9: %v", err)
	}

	for _, run := range []struct {
		overlap bool
		want    hub.NodeOptimizer
		lr      float32
	}{
		{false, hub.NodeOptimizer{Name: "sgd", Momentum: 0.9, WeightDecay: 0.0005}, 0.05},
		{true, hub.NodeOptimizer{Name: "sgd", Momentum: 0.9, WeightDecay: 0.0005}, 0.05},
		// Adam correction (set by hand), with its decay on the workers.
		{true, hub.NodeOptimizer{Name: "adam", WeightDecay: 0.001}, 0.001},
	} {
		overlap := run.overlap
		cfg := trainConfig(2, 8)
		cfg.Compression, cfg.Overlap = "topk:0.05", overlap
		node, err := hub.ConfigureTopK(&cfg, run.want)
		if err != nil {
			t.Fatal(err)
		}
		if run.want.Name == "adam" {
			cfg.WorkerMomentum, cfg.WorkerBeta2, cfg.WorkerEps = hub.AdamBeta1, hub.AdamBeta2, hub.AdamEps
			cfg.WorkerWeightDecay = float32(run.want.WeightDecay)
			node = hub.NodeOptimizer{Name: "sgd"}
		}
		cfg.TopKWarmup = 4
		m, err := models.Build(b, "lenet5", models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		m.InitParams(rand.New(rand.NewPCG(3, 1)))
		tr := solver.NewTrainer(m, solver.NewSGD(b, m.NumParams(), float32(node.Momentum), float32(node.WeightDecay), false), solver.Constant(run.lr))
		h, err := newTestCore(cfg, hub.Model{Name: "lenet5", Trainer: tr})
		if err != nil {
			t.Fatal(err)
		}
		ds := synthetic(t, 300)
		n := newNet(t, h, ds, 2)
		n.run(func() bool { return h.Iteration() >= 3 })
		n.addNode(ds, 2, 3)
		n.finish()
		if len(n.hubErrs) > 0 {
			t.Errorf("overlap %v: refusals %v", overlap, n.hubErrs)
		}
		for _, name := range []string{"w0", "w1", "w2"} {
			if !slices.Contains(n.checked[name], 8) {
				t.Errorf("overlap %v: %s hash checked at %v, want through 8", overlap, name, n.checked[name])
			}
		}
		for _, nd := range n.nodes {
			if sgd, ok := nd.core.Trainer().Opt.(*solver.SGD); !ok || sgd.Momentum != 0 {
				t.Errorf("overlap %v: %s steps with %+v, want SGD momentum 0", overlap, nd.name, nd.core.Trainer().Opt)
			}
		}
	}
	// The Welcome carries the settings.
	cfg = trainConfig(1, 3)
	cfg.Compression, cfg.WorkerMomentum, cfg.TopKMin, cfg.TopKWarmup = "topk:0.05", 0.9, 64, 4
	tr := solver.NewTrainer(m, solver.NewSGD(b, m.NumParams(), 0, 0, false), solver.Constant(0.05))
	h, err := newTestCore(cfg, hub.Model{Name: "lenet5", Trainer: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Step("w0", &wire.Register{}); err != nil {
		t.Fatal(err)
	}
	var sess *wire.Session
	for _, e := range h.Ready().Messages {
		if w, ok := e.Msg.(*wire.Welcome); ok {
			sess = &w.Session
		}
	}
	if sess == nil || sess.WorkerMomentum != 0.9 || sess.Momentum != 0 || sess.TopKMin != 64 || sess.TopKWarmup != 4 {
		t.Errorf("the Welcome's session %+v", sess)
	}
}

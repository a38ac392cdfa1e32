package worker

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// fakeHub plays the hub's side by hand with its own copy of the model.
type fakeHub struct {
	t     testing.TB
	model string
	tr    *solver.Trainer
	n     int
}

func newFakeHub(t testing.TB) *fakeHub { return newFakeHubModel(t, "lenet5") }

// serialCPU is a CPU backend whose kernels all run on the calling
// goroutine. The tests that run in a testing/synctest bubble need it: a
// parallel kernel would start the GEMM pool's helper goroutines inside the
// bubble, whose end waits for them, or hand its WaitGroup to helpers
// outside it (gpu/internal/sgemm/pool.go). Results do not depend on the
// thread count.
func serialCPU() *cpu.CPU {
	b := cpu.NewCPU()
	b.SetThreads(1)
	return b
}

// newFakeHubModel is a fake hub for a model with 28×28 inputs.
func newFakeHubModel(t testing.TB, model string) *fakeHub {
	b := serialCPU()
	net, err := models.Build(b, model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(4, 2)))
	tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 1e-4, false), solver.Constant(0.1))
	return &fakeHub{t: t, model: model, tr: tr, n: net.NumParams()}
}

func (f *fakeHub) welcome(batch int) *wire.Welcome {
	w := &wire.Welcome{
		Header:      wire.Header{Iteration: uint64(f.tr.Iter), Sender: "hub"},
		WorkerID:    "w0",
		Model:       f.model,
		ModelConfig: state.EncodeConfig(models.Config{}),
		ModelState:  state.Capture(f.tr.Net, f.tr.Opt),
		BatchSize:   batch,
	}
	if err := state.Describe(&w.Session, f.tr.Opt, f.tr.Sched); err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fakeHub) resync() *wire.ResyncAnswer {
	return &wire.ResyncAnswer{Header: wire.Header{Iteration: uint64(f.tr.Iter)}, ModelState: state.Capture(f.tr.Net, f.tr.Opt)}
}

// merged takes the hub's step with a gradient and returns its Merged.
func (f *fakeHub) merged(scale float32, next int) *wire.Merged {
	g := make(wire.Floats, f.n)
	for i := range g {
		g[i] = scale * float32(i%7-3)
	}
	k := uint64(f.tr.Iter)
	lr := f.tr.LR()
	f.tr.Net.B.Upload(f.tr.Net.Grads, g)
	f.tr.Apply()
	return &wire.Merged{Header: wire.Header{Iteration: k}, Gradient: g, LR: lr,
		WeightsHash: state.NetHash(f.tr.Net), BatchSizes: wire.BatchSizes{"w0": next}}
}

func newWorker(t *testing.T) *Core {
	c, err := NewCore(DefaultConfig(), cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// take returns the Ready and advances.
func take(c *Core) Ready {
	rd := c.Ready()
	c.Advance()
	return rd
}

func kinds(ms []wire.Message) []wire.Kind {
	var ks []wire.Kind
	for _, m := range ms {
		ks = append(ks, m.Kind())
	}
	return ks
}

// compute runs a real forward/backward on a random batch of n.
func compute(t *testing.T, c *Core, req *ComputeRequest) ComputeDone {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(req.Iteration), 3))
	x := make([]float32, req.Batch*28*28)
	labels := make([]int32, req.Batch)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := range labels {
		labels[i] = int32(r.IntN(10))
	}
	loss := c.Trainer().Gradient(x, labels)
	return ComputeDone{Iteration: req.Iteration, Samples: req.Batch, Loss: loss, ComputeNanos: 5000}
}

// TestLifecycle walks register → welcome → compute → push → merged →
// compute → goodbye, checking every output.
func TestLifecycle(t *testing.T) {
	f := newFakeHub(t)
	c := newWorker(t)
	rd := take(c)
	if len(rd.Messages) != 1 || rd.Messages[0].Kind() != wire.KindRegister || rd.Messages[0].Head().Sender != "worker" {
		t.Fatalf("first output %v, want a Register from worker", kinds(rd.Messages))
	}
	if err := c.Step("hub", f.welcome(4)); err != nil {
		t.Fatal(err)
	}
	rd = take(c)
	if rd.Compute == nil || !reflect.DeepEqual(*rd.Compute, ComputeRequest{Iteration: 0, Batch: 4, Parts: []int{0}}) || c.ID() != "w0" {
		t.Fatalf("after Welcome: compute %+v, id %q", rd.Compute, c.ID())
	}
	if state.NetHash(c.Trainer().Net) != state.NetHash(f.tr.Net) {
		t.Fatal("Welcome's weights not loaded")
	}
	done := compute(t, c, rd.Compute)
	if err := c.Computed(done); err != nil {
		t.Fatal(err)
	}
	rd = take(c)
	p, ok := rd.Messages[0].(*wire.Push)
	if len(rd.Messages) != 1 || !ok {
		t.Fatalf("after Computed: %v, want a Push", kinds(rd.Messages))
	}
	grads := make([]float32, f.n)
	c.Trainer().Net.B.Download(grads, c.Trainer().Net.Grads)
	if p.Iteration != 0 || p.Samples != 4 || p.ComputeNanos != 5000 || p.Sender != "w0" ||
		p.Loss != float32(done.Loss) || !slices.Equal(p.Gradient, grads) {
		t.Fatalf("Push %d/%d/%d/%q does not carry the compute", p.Iteration, p.Samples, p.ComputeNanos, p.Sender)
	}
	for it := range uint64(3) {
		if err := c.Step("hub", f.merged(0.01, 5)); err != nil {
			t.Fatal(err)
		}
		rd = take(c)
		if c.Iteration() != it+1 || c.Mismatches() != 0 || rd.Compute == nil || rd.Compute.Batch != 5 {
			t.Fatalf("after Merged %d: at %d, %d mismatches, compute %+v", it, c.Iteration(), c.Mismatches(), rd.Compute)
		}
		if err := c.Computed(compute(t, c, rd.Compute)); err != nil {
			t.Fatal(err)
		}
		take(c)
	}
	if c.FinalIteration() != 3 {
		t.Fatalf("FinalIteration before the Goodbye = %d, want Iteration() 3", c.FinalIteration())
	}
	// The hub ended one iteration further on than this worker got: its last
	// Merged was never applied here, the final weights include it.
	if err := c.Step("hub", &wire.Goodbye{Header: wire.Header{Iteration: 4}, Reason: "done", FinalWeights: []float32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if rd = take(c); !rd.Done {
		t.Fatal("not done after Goodbye")
	}
	if w, _ := c.Final(); !slices.Equal(w, []float32{1, 2}) {
		t.Fatalf("Final = %v", w)
	}
	if c.FinalIteration() != 4 || c.Iteration() != 3 {
		t.Fatalf("after a Goodbye at 4: FinalIteration %d, Iteration %d; want 4 and 3", c.FinalIteration(), c.Iteration())
	}
	if err := c.Step("hub", f.merged(0, 1)); !errors.Is(err, ErrDone) {
		t.Fatalf("after Goodbye: %v, want ErrDone", err)
	}
}

// idle returns a worker that joined mid-iteration (batch 0) at f's state.
func idle(t *testing.T, f *fakeHub) *Core {
	c := newWorker(t)
	if err := c.Step("hub", f.welcome(0)); err != nil {
		t.Fatal(err)
	}
	if rd := take(c); rd.Compute != nil {
		t.Fatal("batch 0 must not start a compute")
	}
	return c
}

// TestMismatchResync: a Merged whose hash differs from the worker's result
// is counted and answered with a ResyncRequest; Merged messages are
// dropped until the ResyncAnswer, which is loaded.
func TestMismatchResync(t *testing.T) {
	f := newFakeHub(t)
	c := idle(t, f)
	m := f.merged(0.01, 2)
	m.WeightsHash[0] ^= 1
	if err := c.Step("hub", m); err != nil {
		t.Fatal(err)
	}
	rd := take(c)
	if c.Mismatches() != 1 || rd.Compute != nil || !slices.Equal(kinds(rd.Messages), []wire.Kind{wire.KindResyncRequest}) {
		t.Fatalf("mismatch: %d, compute %v, sent %v", c.Mismatches(), rd.Compute, kinds(rd.Messages))
	}
	if err := c.Step("hub", f.merged(0.01, 2)); err != nil {
		t.Fatalf("Merged while resyncing: %v, want dropped silently", err)
	}
	before := state.NetHash(c.Trainer().Net)
	if take(c); state.NetHash(c.Trainer().Net) != before {
		t.Fatal("a Merged was applied while resyncing")
	}
	if err := c.Step("hub", f.resync()); err != nil {
		t.Fatal(err)
	}
	if c.Iteration() != 2 || state.NetHash(c.Trainer().Net) != state.NetHash(f.tr.Net) {
		t.Fatalf("after ResyncAnswer at %d: weights differ", c.Iteration())
	}
	if err := c.Step("hub", f.merged(0.02, 3)); err != nil || c.Mismatches() != 1 {
		t.Fatalf("after resync: %v, %d mismatches", err, c.Mismatches())
	}
	if rd := take(c); rd.Compute == nil || rd.Compute.Iteration != 3 {
		t.Fatalf("compute %+v, want iteration 3", rd.Compute)
	}
}

// TestRefusals: inputs a worker must refuse, with their sentinels.
func TestRefusals(t *testing.T) {
	f := newFakeHub(t)
	t.Run("not the hub", func(t *testing.T) {
		c := idle(t, f)
		if err := c.Step("mallory", f.merged(0, 1)); !errors.Is(err, ErrUnknownPeer) {
			t.Fatalf("%v, want ErrUnknownPeer", err)
		}
	})
	t.Run("stale merged", func(t *testing.T) {
		old := f.merged(0.01, 1)
		c := idle(t, f)
		before := state.NetHash(c.Trainer().Net)
		if err := c.Step("hub", old); !errors.Is(err, ErrStale) || state.NetHash(c.Trainer().Net) != before {
			t.Fatalf("%v, want ErrStale and no change", err)
		}
		if rd := take(c); len(rd.Messages) != 0 {
			t.Fatalf("stale Merged answered with %v", kinds(rd.Messages))
		}
	})
	t.Run("future merged", func(t *testing.T) {
		c := idle(t, f)
		f.merged(0.01, 1)
		if err := c.Step("hub", f.merged(0.01, 1)); !errors.Is(err, ErrFuture) {
			t.Fatalf("%v, want ErrFuture", err)
		}
		if rd := take(c); !slices.Equal(kinds(rd.Messages), []wire.Kind{wire.KindResyncRequest}) {
			t.Fatalf("sent %v, want a ResyncRequest", kinds(rd.Messages))
		}
	})
	t.Run("bad merged", func(t *testing.T) {
		for _, mutate := range []func(m *wire.Merged){
			func(m *wire.Merged) { m.Gradient = m.Gradient[:10] },
			func(m *wire.Merged) { m.Gradient[3] = float32(math.NaN()) },
			func(m *wire.Merged) { m.LR = float32(math.Inf(1)) },
		} {
			c := idle(t, f)
			before := state.NetHash(c.Trainer().Net)
			m := f.merged(0.01, 1)
			mutate(m)
			if err := c.Step("hub", m); !errors.Is(err, ErrBadMessage) || state.NetHash(c.Trainer().Net) != before {
				t.Fatalf("%v, want ErrBadMessage and no change", err)
			}
		}
	})
	t.Run("merged before welcome", func(t *testing.T) {
		if err := newWorker(t).Step("hub", f.merged(0, 1)); !errors.Is(err, ErrUnexpected) {
			t.Fatalf("%v, want ErrUnexpected", err)
		}
	})
	t.Run("push from the hub", func(t *testing.T) {
		if err := idle(t, f).Step("hub", &wire.Push{}); !errors.Is(err, ErrUnexpected) {
			t.Fatalf("%v, want ErrUnexpected", err)
		}
	})
	t.Run("unknown model", func(t *testing.T) {
		c := newWorker(t)
		take(c)
		w := f.welcome(1)
		w.Model = "resnet-9000"
		if err := c.Step("hub", w); !errors.Is(err, ErrModel) {
			t.Fatalf("%v, want ErrModel", err)
		}
		rd := take(c)
		if !rd.Done || !slices.Equal(kinds(rd.Messages), []wire.Kind{wire.KindReject}) {
			t.Fatalf("done %v, sent %v; want a Reject and the end", rd.Done, kinds(rd.Messages))
		}
	})
	t.Run("bad completions", func(t *testing.T) {
		c := newWorker(t)
		if err := c.Computed(ComputeDone{Samples: 1}); !errors.Is(err, ErrUnexpected) {
			t.Fatalf("no compute out: %v", err)
		}
		if err := c.Step("hub", f.welcome(4)); err != nil {
			t.Fatal(err)
		}
		k := uint64(f.tr.Iter)
		for _, d := range []ComputeDone{
			{Iteration: k + 1, Samples: 4}, {Iteration: k, Samples: 0},
			{Iteration: k, Samples: 5}, {Iteration: k, Samples: 4, ComputeNanos: -1},
		} {
			if err := c.Computed(d); !errors.Is(err, ErrBadCompute) {
				t.Errorf("%+v: %v, want ErrBadCompute", d, err)
			}
		}
		// A non-finite loss is not pushed.
		if err := c.Computed(ComputeDone{Iteration: k, Samples: 4, Loss: math.NaN()}); err != nil {
			t.Fatal(err)
		}
		if rd := take(c); len(rd.Messages) != 1 || rd.Messages[0].Kind() != wire.KindRegister {
			t.Fatalf("sent %v, want no Push", kinds(rd.Messages))
		}
	})
}

// TestHeldDuringCompute: messages that change the net wait for the compute
// in flight; a Merged of the computing iteration makes its push useless.
func TestHeldDuringCompute(t *testing.T) {
	f := newFakeHub(t)
	c := newWorker(t)
	if err := c.Step("hub", f.welcome(3)); err != nil {
		t.Fatal(err)
	}
	rd := take(c)
	before := state.NetHash(c.Trainer().Net)
	m := f.merged(0.01, 2) // the hub closed the iteration without us
	if err := c.Step("hub", m); err != nil {
		t.Fatal(err)
	}
	if state.NetHash(c.Trainer().Net) != before {
		t.Fatal("the net changed while a compute was out")
	}
	if err := c.Computed(compute(t, c, rd.Compute)); err != nil {
		t.Fatal(err)
	}
	rd = take(c)
	if len(rd.Messages) != 0 || c.Iteration() != 1 || rd.Compute == nil || rd.Compute.Iteration != 1 {
		t.Fatalf("sent %v, at %d, compute %+v; want no push, the held Merged applied, iteration 1 computing",
			kinds(rd.Messages), c.Iteration(), rd.Compute)
	}
	if state.NetHash(c.Trainer().Net) != state.NetHash(f.tr.Net) {
		t.Fatal("weights differ from the hub's after the held Merged")
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"no name":   func(c *Config) { c.Name = "" },
		"no hub":    func(c *Config) { c.Hub = "" },
		"neg speed": func(c *Config) { c.Speed = -1 },
		"nan speed": func(c *Config) { c.Speed = math.NaN() },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	if _, err := NewCore(DefaultConfig(), nil); !errors.Is(err, ErrConfig) {
		t.Errorf("nil backend: %v", err)
	}
}

package hub_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/worker"
)

// synthetic returns a small deterministic MNIST-shaped data set
// (data.Synthetic): random pixels, labels from a fixed rule so that there
// is something to learn.
func synthetic(t testing.TB, n int) data.Dataset {
	t.Helper()
	ds, err := data.Synthetic(n, rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// node is one simulated phone: a worker core, its shard's loader, and what
// it computed (for the single-device reference).
type node struct {
	name   string
	core   *worker.Core
	loader *data.Loader
	x      []float32
	labels []int32
	// silent nodes never finish their computes (a stalled phone).
	silent bool
	// batches[k] is the batch the node computed for iteration k.
	batches map[uint64]batch
	// stalled holds a compute handed out while silent.
	stalled *worker.ComputeRequest
	// partwise nodes report every gradient part with PartDone, last first,
	// before Computed, as a driver with per-layer completion does.
	partwise bool
}

type batch struct {
	x      []float32
	labels []int32
}

// net is a tiny deterministic network: one hub core and its workers,
// messages passed in order by a loop of rounds.
type net struct {
	t      testing.TB
	hub    *testCore
	nodes  []*node
	byID   map[string]*node
	inbox  map[string][]wire.Message // hub → worker, in order
	toHub  []envelope                // worker → hub, in order
	events []hub.Event
	// hubErrs collects errors the hub returned for worker messages.
	hubErrs []error
	// checked[name] lists the iterations at which the node's weights hash
	// was found equal to the hub's.
	checked map[string][]uint64
	// doneSeen is set when a hub Ready with Done was delivered.
	doneSeen bool
	// atCheck, when set, runs at every invariant check (between the
	// workers' and the hub's halves of a round).
	atCheck func()
}

type envelope struct {
	from string
	msg  wire.Message
}

func newHubCore(t testing.TB, cfg hub.Config, seed uint64) *testCore {
	t.Helper()
	return newHubCoreOn(t, cfg, seed, cpu.NewCPU())
}

// newHubCoreOn is newHubCore on backend b.
func newHubCoreOn(t testing.TB, cfg hub.Config, seed uint64, b gpu.Backend) *testCore {
	t.Helper()
	m, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.InitParams(rand.New(rand.NewPCG(seed, 1)))
	opt := solver.NewSGD(b, m.NumParams(), 0.9, 0, false)
	tr := solver.NewTrainer(m, opt, solver.Constant(0.05))
	h, err := newTestCore(cfg, hub.Model{Name: "lenet5", Trainer: tr})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newNet(t testing.TB, h *testCore, ds data.Dataset, workers int) *net {
	n := &net{t: t, hub: h, byID: map[string]*node{}, inbox: map[string][]wire.Message{},
		checked: map[string][]uint64{}}
	for i := range workers {
		n.addNode(ds, i, workers)
	}
	return n
}

// addNode makes worker i of n on shard i of n.
func (n *net) addNode(ds data.Dataset, i, of int) *node {
	shard, err := data.Shard(ds, i, of)
	if err != nil {
		n.t.Fatal(err)
	}
	cfg := worker.DefaultConfig()
	cfg.Name = fmt.Sprintf("w%d", i)
	core, err := worker.NewCore(cfg, cpu.NewCPU())
	if err != nil {
		n.t.Fatal(err)
	}
	nd := &node{name: cfg.Name, core: core, loader: data.NewLoader(shard, 1, uint64(100+i), true),
		batches: map[uint64]batch{}}
	n.nodes = append(n.nodes, nd)
	n.byID[nd.name] = nd
	return nd
}

// round runs one exchange: (1) every worker handles its inbox and runs the
// computes asked for, its output queued for the hub; (2) the invariant is
// checked: every worker at the hub's iteration holds the hub's weights;
// (3) the hub handles the queue and its output is put in the inboxes. It
// reports whether anything moved.
func (n *net) round() bool {
	busy := false
	for _, nd := range n.nodes {
		for len(n.inbox[nd.name]) > 0 {
			m := n.inbox[nd.name][0]
			n.inbox[nd.name] = n.inbox[nd.name][1:]
			_ = nd.core.Step("hub", m) // refusals show as worker events
			busy = true
		}
		n.drain(nd)
	}
	n.check()
	q := n.toHub
	n.toHub = nil
	for _, e := range q {
		busy = true
		if err := n.hub.Step(e.from, e.msg); err != nil {
			n.hubErrs = append(n.hubErrs, err)
		}
	}
	n.deliver()
	return busy
}

// drain takes a worker's output until it has none, running computes.
func (n *net) drain(nd *node) {
	for {
		rd := nd.core.Ready()
		nd.core.Advance()
		for _, m := range rd.Messages {
			n.toHub = append(n.toHub, envelope{nd.name, m})
		}
		if rd.Compute == nil {
			return
		}
		if nd.silent {
			nd.stalled = rd.Compute
			return
		}
		n.compute(nd, *rd.Compute)
	}
}

// deliver moves the hub's output into the inboxes.
func (n *net) deliver() {
	hr := n.hub.Ready()
	n.hub.Advance()
	for _, e := range hr.Messages {
		n.inbox[e.To] = append(n.inbox[e.To], e.Msg)
	}
	n.events = append(n.events, hr.Events...)
	n.doneSeen = n.doneSeen || hr.Done
}

// check compares the weights of every worker at the hub's iteration with
// the hub's.
func (n *net) check() {
	want := state.NetHash(n.hub.Trainer().Net)
	for _, nd := range n.nodes {
		tr := nd.core.Trainer()
		if tr == nil || nd.core.Iteration() != n.hub.Iteration() {
			continue
		}
		if got := state.NetHash(tr.Net); got != want {
			n.t.Fatalf("%s at iteration %d: weights hash %x, hub %x", nd.name, nd.core.Iteration(), got[:4], want[:4])
		}
		c := n.checked[nd.name]
		if len(c) == 0 || c[len(c)-1] != nd.core.Iteration() {
			n.checked[nd.name] = append(c, nd.core.Iteration())
		}
	}
	if n.atCheck != nil {
		n.atCheck()
	}
}

// compute runs the trainer's Gradient on the node's next batch.
func (n *net) compute(nd *node, req worker.ComputeRequest) {
	tr := nd.core.Trainer()
	size := 28 * 28
	if len(nd.labels) < req.Batch {
		nd.x, nd.labels = make([]float32, req.Batch*size), make([]int32, req.Batch)
	}
	nd.loader.SetBatch(req.Batch)
	got, _ := nd.loader.Next(nd.x, nd.labels)
	x, labels := slices.Clone(nd.x[:got*size]), slices.Clone(nd.labels[:got])
	nd.batches[req.Iteration] = batch{x, labels}
	loss := tr.Gradient(x, labels)
	if nd.partwise {
		for j := len(req.Parts) - 1; j >= 0; j-- {
			err := nd.core.PartDone(worker.PartDone{Iteration: req.Iteration, Part: j, Samples: got, Loss: loss,
				ComputeNanos: int64(got) * 1000 * int64(len(req.Parts)-j) / int64(len(req.Parts))})
			if err != nil {
				n.t.Fatalf("%s: PartDone: %v", nd.name, err)
			}
		}
	}
	err := nd.core.Computed(worker.ComputeDone{Iteration: req.Iteration, Samples: got, Loss: loss,
		ComputeNanos: int64(got) * 1000})
	if err != nil {
		n.t.Fatalf("%s: Computed: %v", nd.name, err)
	}
}

// settle runs rounds until nothing moves.
func (n *net) settle() {
	n.deliver()
	for i := 0; n.round(); i++ {
		if i > 20000 {
			n.t.Fatal("the network does not settle")
		}
	}
}

func (n *net) count(kind hub.EventKind) int {
	c := 0
	for _, e := range n.events {
		if e.Kind == kind {
			c++
		}
	}
	return c
}

func relDiff(a, b []float32) float64 {
	var d, s float64
	for i := range a {
		d += (float64(a[i]) - float64(b[i])) * (float64(a[i]) - float64(b[i]))
		s += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(d / s)
}

// run runs rounds until done reports true, ticking the hub whenever nothing
// moves (time passes only when the network is quiet, as on a real one where
// compute takes longer than a message).
func (n *net) run(done func() bool) {
	n.deliver()
	for i := 0; !done(); i++ {
		if i > 20000 {
			n.t.Fatal("the run does not finish")
		}
		if !n.round() {
			n.hub.Tick()
			n.deliver()
		}
	}
}

func (n *net) hubDone() bool { return n.hub.Ready().Done || n.doneSeen }

// finish runs until the hub is done and the workers have handled all it
// sent.
func (n *net) finish() {
	n.run(n.hubDone)
	n.settle()
}

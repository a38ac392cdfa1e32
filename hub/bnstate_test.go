package hub_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// newBNHub is a hub core on a small MobileNet (batch norm after every
// convolution) for 1×28×28 inputs, every layer but the last frozen when
// trainLast is set.
func newBNHub(t *testing.T, cfg hub.Config, trainLast bool) *testCore {
	t.Helper()
	b := cpu.NewCPU()
	mc := models.Config{Classes: 10, Input: solver.Shape{C: 1, H: 28, W: 28}, Width: 0.25}
	m, err := models.Build(b, "mobilenet-small", mc)
	if err != nil {
		t.Fatal(err)
	}
	m.InitParams(rand.New(rand.NewPCG(5, 1)))
	if trainLast {
		m.FreezeAllButLast(1)
	}
	tr := solver.NewTrainer(m, solver.NewSGD(b, m.NumParams(), 0.9, 0, false), solver.Constant(0.05))
	h, err := newTestCore(cfg, hub.Model{Name: "mobilenet-small", Config: mc, Trainer: tr})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func netState(n *solver.Net) []float32 {
	s := make([]float32, n.State.Len())
	n.B.Download(s, n.State)
	return s
}

// TestBatchNormStatisticsMerged: the hub's master net runs no forward pass,
// so its batch-norm running statistics come from the workers: each push
// carries the worker's, the hub averages them by samples and sends the
// mean with Merged, and after every iteration every node holds the same
// statistics, which have moved from their initial values. (Weights are
// compared with the hub's after every round by the harness.)
func TestBatchNormStatisticsMerged(t *testing.T) {
	const iters = 3
	h := newBNHub(t, trainConfig(3, iters), false)
	initial := netState(h.Trainer().Net)
	n := newNet(t, h, synthetic(t, 300), 3)
	n.finish()
	if len(n.hubErrs) != 0 {
		t.Fatalf("hub refused: %v", n.hubErrs)
	}
	if slices.Equal(netState(h.Trainer().Net), initial) {
		t.Fatal("the hub's batch-norm statistics never moved")
	}
	for _, nd := range n.nodes {
		_, fs := nd.core.Final()
		if !slices.Equal(fs, netState(h.Trainer().Net)) {
			t.Errorf("%s: final batch-norm state differs from the hub's", nd.name)
		}
		// The last Merged replaced the statistics its own forward pass left.
		if !slices.Equal(netState(nd.core.Trainer().Net), netState(h.Trainer().Net)) {
			t.Errorf("%s: batch-norm statistics differ from the hub's after the run", nd.name)
		}
	}
}

// TestMergeStateWeighted: the merged statistics are the sample-weighted
// mean of what the pushes carried; a push whose statistics have the wrong
// length or a NaN is refused.
func TestMergeStateWeighted(t *testing.T) {
	cfg := trainConfig(2, 0)
	cfg.MaxWorkers = 2
	h := newBNHub(t, cfg, false)
	for _, id := range []string{"w0", "w1"} {
		if err := h.Step(id, &wire.Register{Device: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	h.Advance()
	np, ns := h.Trainer().Net.NumParams(), h.Trainer().Net.State.Len()
	pw := func(samples int, v float32) *wire.Push {
		p := push(0, samples, np, 0.001)
		p.State = make(wire.Floats, ns)
		for i := range p.State {
			p.State[i] = v
		}
		return p
	}
	bad := pw(10, 1)
	bad.State = bad.State[:ns-1]
	if err := h.Step("w0", bad); err == nil {
		t.Fatal("a push with short batch-norm statistics was accepted")
	}
	nan := pw(10, 1)
	nan.State[3] = float32(math.NaN())
	if err := h.Step("w0", nan); err == nil {
		t.Fatal("a push with a NaN statistic was accepted")
	}
	if err := h.Step("w0", pw(10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := h.Step("w1", pw(6, 3)); err != nil {
		t.Fatal(err)
	}
	var m *wire.Merged
	for _, e := range h.Ready().Messages {
		if mm, ok := e.Msg.(*wire.Merged); ok {
			m = mm
		}
	}
	if m == nil {
		t.Fatal("no Merged")
	}
	want := float32((10*1.0 + 6*3.0) / 16)
	if len(m.State) != ns || m.State[0] != want || m.State[ns-1] != want {
		t.Fatalf("merged state %v (len %d), want %d values of %v", m.State[:min(3, len(m.State))], len(m.State), ns, want)
	}
	if got := netState(h.Trainer().Net); !slices.Equal(got, m.State) {
		t.Fatal("the hub's own statistics are not the merged ones")
	}
}

// TestFrozenLayersInSession: the hub tells workers which layers it has
// frozen; they freeze the same ones, so cooperative fine-tuning of the last
// layer leaves every other weight bit-identical on every node.
func TestFrozenLayersInSession(t *testing.T) {
	const iters = 3
	h := newBNHub(t, trainConfig(2, iters), true)
	before := state.Params(h.Trainer().Net)
	n := newNet(t, h, synthetic(t, 200), 2)
	n.finish()
	if len(n.hubErrs) != 0 {
		t.Fatalf("hub refused: %v", n.hubErrs)
	}
	after := state.Params(h.Trainer().Net)
	last := h.Trainer().Net.Tensors()
	fcOff := last[len(last)-2].Off // fc.weight, fc.bias are the last two
	if !slices.Equal(before[:fcOff], after[:fcOff]) {
		t.Error("a frozen layer's weights changed")
	}
	if slices.Equal(before[fcOff:], after[fcOff:]) {
		t.Error("the last layer did not learn")
	}
	for _, nd := range n.nodes {
		frozen := 0
		for _, l := range nd.core.Trainer().Net.Layers() {
			if l.Frozen && l.Params > 0 {
				frozen++
			}
		}
		if frozen == 0 {
			t.Errorf("%s froze no layer", nd.name)
		}
		if fw, _ := nd.core.Final(); !slices.Equal(fw, after) {
			t.Errorf("%s: final weights differ from the hub's", nd.name)
		}
	}
}

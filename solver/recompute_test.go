package solver_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// budgetModels are the networks the recomputation tests train: a chain
// with batch norm (mobilenet-small), residual adds and concatenations with
// batch norm in training mode (residual), dropout (alexnet-small), a 1-D
// CNN.
var budgetModels = []string{"mobilenet-small", "residual", "alexnet-small", "har-cnn"}

func buildBudgetModel(t testing.TB, b gpu.Backend, name string) *solver.Net {
	t.Helper()
	var n *solver.Net
	var err error
	if name == "residual" {
		n, err = solver.NewNet(b, solver.Shape{C: 3, H: 8, W: 8}, residualNodes())
	} else {
		n, err = models.Build(b, name, models.Config{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// planDigests builds every small zoo model and the residual network, all
// layers learning and all but the last 2 frozen, and returns their plans'
// digests by name.
func planDigests(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"alexnet-small", "gru-lm", "har-cnn", "lenet-caffe", "lenet5", "lstm-lm", "mobilenet-small", "mobilenet-v1", "residual"} {
		for _, last := range []int{-1, 2} {
			n := buildBudgetModel(t, cpu.NewCPU(), name)
			if last > 0 {
				n.FreezeAllButLast(last)
			}
			out[fmt.Sprintf("%s/%d", name, last)] = n.PlanDigest()
		}
	}
	return out
}

// Without a budget the plans are those of the planner before
// recomputation (digests taken at commit 325e374, with the frozen prefix
// folded), and a budget the plan without replays fits changes nothing
// either.
func TestNoBudgetPlanUnchanged(t *testing.T) {
	want := map[string]string{
		"alexnet-small/-1":   "043abd58756c5731",
		"alexnet-small/2":    "ef81b73955b72a74",
		"gru-lm/-1":          "42575950e7f2b91f",
		"gru-lm/2":           "10b09871c73534aa",
		"har-cnn/-1":         "8bd4f27883e9cf30",
		"har-cnn/2":          "540672dde082740c",
		"lenet-caffe/-1":     "ad16dcc5ab7c8e35",
		"lenet-caffe/2":      "f0f465f4afe64115",
		"lenet5/-1":          "8a5647768d9487eb",
		"lenet5/2":           "bf0768a9b64e6fc7",
		"lstm-lm/-1":         "42575950e7f2b91f",
		"lstm-lm/2":          "10b09871c73534aa",
		"mobilenet-small/-1": "509d006670451996",
		"mobilenet-small/2":  "890f208a79b0ffaa",
		"mobilenet-v1/-1":    "e1915b87a45c3459",
		"mobilenet-v1/2":     "3f02d5988d6b295e",
		"residual/-1":        "09ce95d3d020291d",
		"residual/2":         "465d79aee3042bf3",
	}
	got := planDigests(t)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: plan digest %s, want %s (the plan without a budget changed)", k, got[k], w)
		}
	}
	n := buildBudgetModel(t, cpu.NewCPU(), "mobilenet-small")
	before := n.PlanDigest()
	m, err := n.SetMemoryBudget(1<<40, 6, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Replayed != 0 || n.PlanDigest() != before {
		t.Errorf("a budget that fits without replays changed the plan (%d nodes replayed)", m.Replayed)
	}
}

// replayVariants are the replay plans each model is trained under: every
// cut its own segment, one segment of all the nodes, every other cut, and
// only the first half of the nodes.
func replayVariants(n *solver.Net, nodes int) map[string][][2]int {
	cuts := n.Cuts()
	split := func(every int, upto int) [][2]int {
		var rs [][2]int
		from := 0
		for k, c := range cuts {
			if c > upto {
				break
			}
			if (k+1)%every == 0 {
				rs = append(rs, [2]int{from, c})
				from = c + 1
			}
		}
		if upto == nodes-1 && from <= upto {
			rs = append(rs, [2]int{from, upto})
		}
		return rs
	}
	half := nodes / 2
	for len(cuts) > 0 && !contains(cuts, half) && half < nodes-1 {
		half++
	}
	return map[string][][2]int{
		"each cut":   split(1, nodes-1),
		"one":        {{0, nodes - 1}},
		"every 2nd":  split(2, nodes-1),
		"lower half": split(1, half),
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Recomputing activations gives the same bits as keeping them: gradients,
// weights, batch-norm running statistics (updated once per step, not again
// by the replay) and logits after three steps, an evaluation between them
// and a gradient at another batch size, for every replay plan, with all
// layers learning and with all but the last 2 frozen.
func TestReplaySameBits(t *testing.T) {
	for _, model := range budgetModels {
		for _, last := range []int{-1, 2} {
			ref := frozenFingerprint(t, func(b gpu.Backend) (*solver.Net, error) { return buildBudgetModel(t, b, model), nil }, cpu.NewCPU(), last)
			probe := buildBudgetModel(t, cpu.NewCPU(), model)
			if last > 0 {
				probe.FreezeAllButLast(last) // the cuts depend on what is folded
			}
			for name, ranges := range replayVariants(probe, len(probe.Layers())) {
				n := buildBudgetModel(t, cpu.NewCPU(), model)
				if last > 0 {
					n.FreezeAllButLast(last)
				}
				n.SetReplayed(ranges)
				if n.Replayed() == 0 && (name == "each cut" || name == "every 2nd") {
					t.Errorf("%s, trainable %d, %s: nothing replayed", model, last, name)
				}
				got := stepsFingerprint(t, n)
				sameFingerprint(t, fmt.Sprintf("%s, trainable %d, replayed %s %v", model, last, name, ranges), got, ref, "replayed", "kept")
			}
		}
	}
}

// Under a budget the planner replays as few nodes as fit, its estimate is
// within the budget, the plan trains to the same bits, and a tighter
// budget replays more.
func TestMemoryBudgetFitsAndKeepsBits(t *testing.T) {
	for _, model := range []string{"mobilenet-small", "residual", "alexnet-small"} {
		const batch = 6
		n := buildBudgetModel(t, cpu.NewCPU(), model)
		full := n.StepMemory(batch, 0)
		least, err := n.SetMemoryBudget(1, batch, 0) // refused, with the leanest plan's estimate
		if !errors.Is(err, solver.ErrMemoryBudget) {
			t.Fatalf("%s: a budget of 1 byte: %v", model, err)
		}
		if least.Total >= full.Total {
			t.Fatalf("%s: replaying everything %d bytes, keeping everything %d: nothing saved", model, least.Total, full.Total)
		}
		ref := frozenFingerprint(t, func(b gpu.Backend) (*solver.Net, error) { return buildBudgetModel(t, b, model), nil }, cpu.NewCPU(), -1)
		prev := -1
		for _, share := range []float64{0.9, 0.7, 0.5} {
			limit := least.Total + int64(share*float64(full.Total-least.Total))
			n := buildBudgetModel(t, cpu.NewCPU(), model)
			m, err := n.SetMemoryBudget(limit, batch, 0)
			if err != nil {
				t.Logf("%s: budget %d (keeping %d, replaying all %d): %v", model, limit, full.Total, least.Total, err)
				continue
			}
			if m.Total > limit {
				t.Errorf("%s: budget %d: estimate %d with %d nodes replayed", model, limit, m.Total, m.Replayed)
			}
			if m.Replayed < prev {
				t.Errorf("%s: budget %d replays %d nodes, a larger one %d", model, limit, m.Replayed, prev)
			}
			prev = m.Replayed
			live, planned := n.MaxLive()
			t.Logf("%s batch %d: budget %d bytes (keep all %d): estimate %d, %d nodes replayed in %d segments; %d elements per sample live at most, %d planned", model, batch, limit, full.Total, m.Total, m.Replayed, m.Segments, live, planned)
			got := stepsFingerprint(t, n)
			sameFingerprint(t, fmt.Sprintf("%s under %d bytes", model, limit), got, ref, "budget", "none")
		}
		if prev < 0 {
			t.Errorf("%s: no budget between replaying all and keeping all fitted", model)
		}
	}
}

// A budget that nothing fits is refused with the smallest budget for the
// batch and the largest batch for the budget, and leaves the plan alone.
func TestMemoryBudgetTooSmall(t *testing.T) {
	n := buildBudgetModel(t, cpu.NewCPU(), "mobilenet-small")
	before := n.PlanDigest()
	weights := n.StepMemory(1, 0).Weights
	_, err := n.SetMemoryBudget(weights+weights/2, 64, 0)
	if !errors.Is(err, solver.ErrMemoryBudget) {
		t.Fatalf("err %v, want ErrMemoryBudget", err)
	}
	if !strings.Contains(err.Error(), "needs at least") || !strings.Contains(err.Error(), "samples fit") {
		t.Errorf("error %q: want the smallest budget and the largest batch", err)
	}
	if n.PlanDigest() != before || n.MemoryBudget() != 0 {
		t.Error("a refused budget changed the plan")
	}
	if _, err := n.SetMemoryBudget(weights/2, 64, 0); err == nil || !strings.Contains(err.Error(), "not even 1 sample") {
		t.Errorf("budget below the weights: %v", err)
	}
	t.Log(err)
}

// BenchmarkTrainStepReplay times a training step (forward, loss, backward
// with its replays, SGD with momentum) of mobilenet-small at batch 16
// without a budget and under budgets halfway and all the way down to the
// leanest plan, side by side: what recomputing activations costs in time,
// and the estimate it saves (MiB-step).
func BenchmarkTrainStepReplay(b *testing.B) {
	const batch = 16
	for _, share := range []float64{1, 0.5, 0} {
		b.Run(fmt.Sprintf("budget-%.1f", share), func(b *testing.B) {
			be := cpu.NewCPU()
			net := buildBudgetModel(b, be, "mobilenet-small")
			full := net.StepMemory(batch, 0)
			least, _ := net.SetMemoryBudget(1, batch, 0)
			limit := least.Total + int64(share*float64(full.Total-least.Total))
			m, err := net.SetMemoryBudget(limit, batch, 0)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			net.InitParams(r)
			tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			x := make([]float32, batch*net.In.Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			labels := make([]int32, batch)
			for i := range labels {
				labels[i] = int32(r.IntN(net.Out.Size()))
			}
			for b.Loop() {
				if _, err := tr.Step(x, labels); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(m.Total)/(1<<20), "MiB-step")
			b.ReportMetric(float64(m.Replayed), "replayed")
		})
	}
}

// A steady-state step with replays allocates nothing, as one without.
func TestReplayStepAllocatesNothing(t *testing.T) {
	be := cpu.NewCPU()
	net := buildBudgetModel(t, be, "residual")
	net.SetReplayed([][2]int{{0, len(net.Layers()) - 1}})
	r := rand.New(rand.NewPCG(1, 2))
	net.InitParams(r)
	tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	x := make([]float32, 4*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := []int32{1, 2, 3, 4}
	step := func() {
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if a := testing.AllocsPerRun(5, step); a != 0 {
		t.Errorf("%v allocations per step with replays", a)
	}
}

package cli

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// workCounter is a CPU backend that counts the gradient work of a step:
// weight gradients (convolution filters, biases) and the input gradients
// of convolutions, which a frozen prefix needs only to pass a gradient on
// to an earlier layer that learns.
type workCounter struct {
	gpu.Backend
	filter, bias, data int // calls
	filterFLOPs        float64
}

func (w *workCounter) ConvBackwardFilter(g gpu.ConvGeom, dw, dbias, dy, x, ws gpu.Buffer) {
	w.filter++
	w.filterFLOPs += 2 * float64(g.N*g.K*g.OH*g.OW) * float64(g.C/max(g.Groups, 1)*g.R*g.S)
	w.Backend.ConvBackwardFilter(g, dw, dbias, dy, x, ws)
}

func (w *workCounter) BiasGrad(dbias, dy gpu.Buffer, n, c, hw int) {
	w.bias++
	w.Backend.BiasGrad(dbias, dy, n, c, hw)
}

func (w *workCounter) ConvBackwardData(g gpu.ConvGeom, dx, dy, wt, ws gpu.Buffer) {
	w.data++
	w.Backend.ConvBackwardData(g, dx, dy, wt, ws)
}

// fineTuneNets returns the same architecture twice on b: MobileNet v1 at
// width 0.25 imported from PyTorch's ONNX export, and cotrain's built-in
// mobilenet-small (width 0.5), both on 3×32×32 inputs with 10 classes.
func fineTuneNets(t testing.TB, b gpu.Backend) map[string]*solver.Net {
	f, _, err := ImportONNX("../../../models/onnx/testdata/mobilenet_a025_op13.onnx", "imagenet")
	if err != nil {
		t.Fatal(err)
	}
	imported, err := f.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := models.Build(b, "mobilenet-small", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	builtin.InitParams(rand.New(rand.NewPCG(1, 2)))
	return map[string]*solver.Net{"imported": imported, "built-in": builtin}
}

// stepper returns a function that runs one SGD training step of batch 4
// on random data.
func stepper(t testing.TB, net *solver.Net) func() {
	x := make([]float32, 4*net.In.Size())
	r := rand.New(rand.NewPCG(3, 4))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	opt, err := solver.NewOptimizer(net.B, "sgd", net.NumParams(), 0.9, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(net, opt, solver.Constant(0.01))
	return func() {
		if _, err := tr.Step(x, []int32{0, 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrozenPrefixCostsNoGradientWork: with --train-last 1 (the head
// alone learns) a training step of an imported MobileNet computes no
// convolution filter gradient and passes no gradient back through any
// convolution, exactly as for the built-in MobileNet; with --train-last
// all it computes one filter gradient per convolution. So fine-tuning the
// last layers of an imported network costs the forward pass and the head.
func TestFrozenPrefixCostsNoGradientWork(t *testing.T) {
	for _, name := range []string{"imported", "built-in"} {
		counts := map[string]*workCounter{}
		for _, spec := range []string{"1", "2", "all"} {
			wc := &workCounter{Backend: cpu.NewCPU()}
			net := fineTuneNets(t, wc)[name]
			if err := TrainLast(net, spec); err != nil {
				t.Fatal(err)
			}
			stepper(t, net)()
			counts[spec] = wc
		}
		var convs int
		for _, l := range fineTuneNets(t, cpu.NewCPU())[name].Layers() {
			if l.Kind == "conv2d" {
				convs++
			}
		}
		one, two, all := counts["1"], counts["2"], counts["all"]
		t.Logf("%s (%d convolutions): filter gradients %d/%d/%d (%.3g/%.3g FLOPs with 2/all), conv input gradients %d/%d/%d for --train-last 1/2/all",
			name, convs, one.filter, two.filter, all.filter, two.filterFLOPs, all.filterFLOPs, one.data, two.data, all.data)
		if one.filter != 0 || one.data != 0 {
			t.Errorf("%s, --train-last 1: %d filter and %d input gradients of convolutions, want none", name, one.filter, one.data)
		}
		if all.filter != convs || all.data < convs-1 {
			t.Errorf("%s, --train-last all: %d filter and %d input gradients for %d convolutions", name, all.filter, all.data, convs)
		}
		// Two trainable layers: the head and the last convolution (or its
		// batch norm), so at most one filter gradient.
		if two.filter > 1 {
			t.Errorf("%s, --train-last 2: %d filter gradients, want at most 1", name, two.filter)
		}
	}
}

// BenchmarkFinetuneStep times a training step of batch 4 with the head
// alone learning and with every layer learning, for an imported and a
// built-in MobileNet: the ratio is what freezing saves.
//
//	go test ./cmd/internal/cli -run '^$' -bench FinetuneStep
func BenchmarkFinetuneStep(b *testing.B) {
	for _, name := range []string{"imported", "built-in"} {
		for _, spec := range []string{"1", "all"} {
			b.Run(name+"/train-last="+spec, func(b *testing.B) {
				net := fineTuneNets(b, cpu.NewCPU())[name]
				if err := TrainLast(net, spec); err != nil {
					b.Fatal(err)
				}
				step := stepper(b, net)
				step() // allocations
				b.ResetTimer()
				for range b.N {
					step()
				}
			})
		}
	}
}

// TestImportONNXExternalData: what `cotrain import`, `hub --weights` and
// `finetune --weights` do with a model whose weights lie in a data file
// beside it (today's torch.onnx.export default), read from the model's folder.
func TestImportONNXExternalData(t *testing.T) {
	f, net, err := ImportONNX("../../../models/onnx/testdata/opsets/cnn_op20.onnx", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.MetaValue("onnx.opset"); got != "20" || net.NumParams() != 1598 {
		t.Errorf("opset %q, %d parameters; want 20 and 1598", got, net.NumParams())
	}
}

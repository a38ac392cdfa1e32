package onnx

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// foldFixtures are the imported networks whose fine-tuning with the frozen
// prefix's batch norm folded (solver/fold.go) the fold tests check: a
// ResNet (bias-free convolutions, batch norm, ReLU, residual sums) and a
// MobileNet (depthwise and pointwise convolutions, batch norm, Clip as
// ReLU6).
var foldFixtures = []string{"resnet_small_op13", "mobilenet_a025_op13"}

// checkFoldedImport fine-tunes the last layer of the fixture on b for a few
// SGD steps, folded twice and unfolded, and checks that the two folded
// runs end with the same weights bit for bit, that their losses are the
// unfolded run's within a relative tol, and that the ONNX export of the
// net after the fine-tune, with the trained layer's weights put back, is
// the export before it byte for byte: folding writes nothing of the
// network's own.
func checkFoldedImport(t *testing.T, b gpu.Backend, name string, tol float64) {
	t.Helper()
	base := filepath.Join("testdata", name)
	f := importFile(t, base+".onnx")
	x, _ := readNPY(t, base+".x.npy")
	export := func(net *solver.Net) []byte {
		s := models.Snapshot(f.Model, f.Config, net, nil)
		s.Meta = f.Meta
		var buf bytes.Buffer
		if err := Export(&buf, s); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	run := func(fold bool) (losses []float64, params []float32) {
		net, err := f.Build(b)
		if err != nil {
			t.Fatal(err)
		}
		net.SetFolding(fold)
		net.FreezeAllButLast(1)
		before := export(net)
		p0 := make([]float32, net.Params.Len())
		net.B.Download(p0, net.Params)
		tr := solver.NewTrainer(net, solver.NewSGD(net.B, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
		n := len(x) / net.In.Size()
		labels := make([]int32, n)
		for i := range labels {
			labels[i] = int32(i % net.Out.Size())
		}
		for range 5 {
			loss, err := tr.Step(x, labels)
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, loss)
		}
		if fold && net.FoldedSize() == 0 {
			t.Fatal("nothing folded")
		}
		params = make([]float32, net.Params.Len())
		net.B.Download(params, net.Params)
		restored := append([]float32(nil), params...)
		for _, r := range net.Trainable() {
			copy(restored[r.Off:r.Off+r.Len], p0[r.Off:r.Off+r.Len])
		}
		net.B.Upload(net.Params, restored)
		net.ParamsChanged()
		if !bytes.Equal(export(net), before) {
			t.Error("the export after the fine-tune, trained weights put back, differs from the one before")
		}
		return losses, params
	}
	l1, p1 := run(true)
	l2, p2 := run(true)
	if fmt.Sprint(l1) != fmt.Sprint(l2) {
		t.Errorf("two folded runs: losses %v and %v", l1, l2)
	}
	for i := range p1 {
		if math.Float32bits(p1[i]) != math.Float32bits(p2[i]) {
			t.Fatalf("two folded runs: parameter %d is %v and %v", i, p1[i], p2[i])
		}
	}
	lu, _ := run(false)
	worst := 0.0
	for i := range lu {
		worst = max(worst, math.Abs(l1[i]-lu[i])/math.Abs(lu[i]))
	}
	if !(worst <= tol) {
		t.Errorf("losses folded %v, unfolded %v: relative difference %.3g > %.3g", l1, lu, worst, tol)
	}
	t.Logf("losses %.6f ... %.6f; folded against unfolded: relative %.3g", l1[0], l1[len(l1)-1], worst)
}

// TestFoldedFineTuneImported: checkFoldedImport on the CPU. The tolerance
// is TestFoldedFineTune's (solver): float32 rounding through a dozen
// layers, about 1e-6 relative in the loss, and 1e-5 allowed.
func TestFoldedFineTuneImported(t *testing.T) {
	for _, name := range foldFixtures {
		t.Run(name, func(t *testing.T) { checkFoldedImport(t, cpu.NewCPU(), name, 1e-5) })
	}
}

package onnx

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// TestZooOps imports the model zoo's Caffe-style operators and networks as
// scripts/onnx_opsets.py writes them (opset 9, onnx.helper): zoo_ops.onnx
// (asymmetric pads on Conv, MaxPool over negative values, AveragePool
// counting its padding, a Sum of three inputs), zoo_lrn.onnx (LRN with
// AlexNet's parameters and with larger ones), zoo_alexnet.onnx (BVLC
// AlexNet's structure scaled down: grouped convolutions, LRN, MaxPool,
// Gemm, Dropout, a final Softmax) and zoo_resnet.onnx (Caffe2 ResNet's:
// bias-free convolutions with BatchNormalization, residual joins as Sum).
// It checks the output and every parameter gradient against PyTorch's to a
// relative 1e-4 and fine-tunes every layer (--train-last all): SGD steps on
// the batch lower its loss.
func TestZooOps(t *testing.T) {
	for _, name := range zooOpsFixtures {
		t.Run(name, func(t *testing.T) { checkZooOps(t, cpu.NewCPU(), name) })
	}
}

// zooOpsFixtures are the fixtures TestZooOps and TestZooOpsOnOpenCL check.
var zooOpsFixtures = [...]string{"zoo_ops", "zoo_lrn", "zoo_alexnet", "zoo_resnet", "pad_value_op9", "pad_value_op13", "dilated_op13", "dilated1d_op13", "convtranspose_op13", "matmul_op13", "tile_op13", "upsample_op9", "resize_op11", "resize_op13", "resize_op18", "resize_op19", "resize1d_op13", "pad_modes_op9", "pad_modes_op13", "pad_modes_op18", "pad_modes1d_op13", "dilatedpool_op13", "dilatedpool1d_op13", "avgpool_dilated_op19", "bicubic_op13", "convtranspose2_op13", "convtranspose1d_op13", "convtranspose_pads_op13", "resize_sym_op19", "resize_aa_op18", "convnext_op13", "convnext_op17", "matmul_bcast_op13", "vit_op13", "vit_op17", "pads1d_op13", "dilatedpool_pads_op13"}

// checkZooOps is TestZooOps for one fixture on backend b.
func checkZooOps(t *testing.T, b gpu.Backend, name string) {
	g := readJSON[structGolden](t, filepath.Join(opsetsDir, name+".json"))
	f, err := ImportFile(filepath.Join(opsetsDir, name+".onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// PyTorch's gradients are taken with dropout off (its mask is random);
	// the fine-tuning below keeps it.
	net, err := withoutDropout(t, f).Build(b)
	if err != nil {
		t.Fatal(err)
	}
	// cotrain export writes the same network back (LRN, the pad layers, the
	// add, the grouped convolutions, batch norm): the import of its export
	// computes the same.
	back, err := reimport(t, f).Build(b)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(forward(back, g.X), forward(net, g.X)); e != 0 {
		t.Errorf("export round trip: relative change %.3g", e)
	}
	// The training pass against PyTorch: output and every gradient (one
	// that is 0 in exact arithmetic, matmul_op13's key bias, absolutely).
	checkGrads(t, net, g)

	tuned, err := f.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := solver.NewOptimizer(tuned.B, "sgd", tuned.Params.Len(), 0.9, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(tuned, opt, solver.Constant(0.01))
	labels := []int32{0, 3}
	var first, last float64
	const steps = 10
	for i := range steps {
		loss, err := tr.Step(g.X, labels)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = loss
		}
		last = loss
	}
	if !(last < first) {
		t.Errorf("loss %.4f after %d steps, %.4f at the first", last, steps, first)
	}
	t.Logf("fine-tuning every layer on %s: loss %.4f -> %.4f in %d SGD steps", b.Name(), first, last, steps)
}

// withoutDropout returns a copy of the graph file f whose dropout layers
// drop nothing, for comparing a training pass with PyTorch's.
func withoutDropout(t *testing.T, f *models.File) *models.File {
	t.Helper()
	var layers []models.Layer
	if err := json.Unmarshal([]byte(f.MetaValue(models.MetaGraph)), &layers); err != nil {
		t.Fatal(err)
	}
	for i := range layers {
		if layers[i].Kind == "dropout" {
			layers[i].P = 0
		}
	}
	raw, err := json.Marshal(layers)
	if err != nil {
		t.Fatal(err)
	}
	c := *f
	c.Meta = slices.Clone(f.Meta)
	for i, kv := range c.Meta {
		if kv[0] == models.MetaGraph {
			c.Meta[i][1] = string(raw)
		}
	}
	return &c
}

// TestExportZooOpsForPython writes cotrain's exports of the fixtures of the
// operators #27 added (Pad with a value, dilated Conv, ConvTranspose,
// MatMul of activations, Tile, Resize and Upsample, Pad reflect and edge) for `scripts/onnx_opsets.py check DIR` when
// COTRAIN_ONNX_EXPORT names a folder; otherwise it is skipped (a Go test
// never needs Python).
func TestExportZooOpsForPython(t *testing.T) {
	dir := os.Getenv("COTRAIN_ONNX_EXPORT")
	if dir == "" {
		t.Skip("COTRAIN_ONNX_EXPORT not set")
	}
	for _, name := range []string{"pad_value_op9", "pad_value_op13", "dilated_op13", "dilated1d_op13", "convtranspose_op13", "matmul_op13", "tile_op13", "upsample_op9", "resize_op11", "resize_op13", "resize_op18", "resize_op19", "resize1d_op13", "pad_modes_op9", "pad_modes_op13", "pad_modes_op18", "pad_modes1d_op13", "dilatedpool_op13", "dilatedpool1d_op13", "avgpool_dilated_op19", "bicubic_op13", "convtranspose2_op13", "convtranspose1d_op13", "convtranspose_pads_op13", "resize_sym_op19", "resize_aa_op18",
		"convnext_op13", "convnext_op17", "matmul_bcast_op13",
		"vit_op13", "vit_op17", "pads1d_op13", "dilatedpool_pads_op13"} {
		f, err := ImportFile(filepath.Join(opsetsDir, name+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Export(&buf, f); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".cotrain.onnx"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

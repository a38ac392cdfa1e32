package onnx

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
)

// torch2Dir holds what PyTorch 2.11's torch.onnx.export wrote on the device
// machine (scripts/torch2_exports.py): NAME.onnx with default arguments (the
// dynamo exporter, opset 20, weights in NAME.onnx.data) and
// NAME_legacy.onnx with dynamo=False, beside NAME.x.npy and PyTorch's
// output NAME.y.npy.
const torch2Dir = "testdata/torch2"

// torch2Refused lists the exports the importer does not read yet, each with
// the words its refusal must contain (the operator or input it stops at).
// When support lands, the entry goes and the model joins the checks below:
// the test fails until it does, so that this list stays true.
var torch2Refused = map[string]string{} // none today: every export imports

// TestTorch2Exports imports every model today's PyTorch exported, both
// ways, predicts PyTorch's output to a relative 1e-4 on the CPU backend and
// fine-tunes every layer two steps on the batch, whose loss must fall; the
// ones still refused must say what stops them.
func TestTorch2Exports(t *testing.T) { checkTorch2(t, cpu.NewCPU()) }

// checkTorch2 is TestTorch2Exports on backend b (the OpenCL backend's
// tests run it too: TestTorch2ExportsOnOpenCL).
func checkTorch2(t *testing.T, b gpu.Backend) {
	files, err := filepath.Glob(filepath.Join(torch2Dir, "*.onnx"))
	if err != nil || len(files) < 16 {
		t.Fatalf("%d exports in %s (%v), want 16", len(files), torch2Dir, err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".onnx")
		base := strings.TrimSuffix(name, "_legacy")
		t.Run(name, func(t *testing.T) {
			f, err := ImportFile(path)
			if want, refused := torch2Refused[name]; refused {
				if err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
					t.Fatalf("import: %v, want ErrUnsupported naming %q (if it imports now, drop it from torch2Refused)", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + ".data"); (err == nil) == strings.HasSuffix(name, "_legacy") {
				t.Errorf("external data file present: %v; the default export keeps its weights in one, the legacy one inline", err == nil)
			}
			x, _ := readNPY(t, filepath.Join(torch2Dir, base+".x.npy"))
			want, _ := readNPY(t, filepath.Join(torch2Dir, base+".y.npy"))
			if base == "vit_tv" {
				// torchvision's ViT starts its head at zero, and so is
				// PyTorch's output: a head of 0.5·sin(0.7·i) and the golden
				// scripts/torch2_vit_head.py computed with it.
				want, _ = readNPY(t, filepath.Join(torch2Dir, "vit_tv.yhead.npy"))
				setSinHead(t, f, "heads.head.weight", 5*32)
			}
			net, err := f.Build(b)
			if err != nil {
				t.Fatal(err)
			}
			e := relErr(forward(net, x), want)
			t.Logf("relative error %.3g against PyTorch", e)
			if !(e <= 1e-4) {
				t.Errorf("relative error %.3g against PyTorch 2.11, want <= 1e-4", e)
			}
			n := len(x) / net.In.Size()
			labels := make([]int32, n)
			for i := range labels {
				labels[i] = int32(i % net.Out.Size())
			}
			stepLowersLoss(t, net, x, labels, 0.01)
		})
	}
}

// setSinHead sets f's parameter name, of size elements, to 0.5·sin(0.7·i).
func setSinHead(t *testing.T, f *models.File, name string, size int) {
	t.Helper()
	for i := range f.Params {
		if p := &f.Params[i]; p.Name == name {
			if len(p.Data) != size {
				t.Fatalf("%s has %d elements, want %d", name, len(p.Data), size)
			}
			for k := range p.Data {
				p.Data[k] = float32(0.5 * math.Sin(0.7*float64(k)))
			}
			return
		}
	}
	t.Fatalf("no parameter %s", name)
}

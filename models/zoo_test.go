package models

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// countRow is one line of testdata/param_counts.json, written by
// scripts/onnx_fixtures.py from the same networks built in PyTorch.
type countRow struct {
	Model   string  `json:"model"`
	Classes int     `json:"classes"`
	Input   [3]int  `json:"input"`
	Width   float64 `json:"width"`
	Params  int     `json:"params"`
	State   int     `json:"state"`
}

// TestZooParamCountsMatchPyTorch builds every configuration the script
// counted and compares parameters (PyTorch's parameters()) and state
// (buffers without num_batches_tracked).
func TestZooParamCountsMatchPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/param_counts.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []countRow
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("only %d rows in param_counts.json", len(rows))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		c := Config{Classes: r.Classes, Input: solver.Shape{C: r.Input[0], H: r.Input[1], W: r.Input[2]}, Width: r.Width}
		net, err := Build(cpu.NewCPU(), r.Model, c)
		if err != nil {
			t.Errorf("%s %+v: %v", r.Model, c, err)
			continue
		}
		seen[r.Model] = true
		if got := net.NumParams(); got != r.Params {
			t.Errorf("%s %+v: %d parameters, PyTorch has %d", r.Model, c, got, r.Params)
		}
		if got := net.State.Len(); got != r.State {
			t.Errorf("%s %+v: %d state elements, PyTorch has %d", r.Model, c, got, r.State)
		}
	}
	for _, m := range []string{"alexnet", "alexnet-small", "mobilenet-v1", "mobilenet-small"} {
		if !seen[m] {
			t.Errorf("no PyTorch count checked for %s", m)
		}
	}
}

// TestZooDefaults checks each model's default configuration: the output,
// and the parameter count its description states.
func TestZooDefaults(t *testing.T) {
	for _, tc := range []struct {
		model  string
		params int
		out    int
	}{
		{"alexnet", 61100840, 1000},
		{"alexnet-small", 1094058, 10},
		{"mobilenet-v1", 4231976, 1000},
		{"mobilenet-small", 823722, 10},
	} {
		spec, err := Lookup(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		net, err := Build(cpu.NewCPU(), tc.model, Config{})
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if net.NumParams() != tc.params || net.Out.C != tc.out {
			t.Errorf("%s: %d parameters, %d outputs; want %d, %d", tc.model, net.NumParams(), net.Out.C, tc.params, tc.out)
		}
		if want := formatThousands(tc.params); !strings.Contains(spec.Description, want) {
			t.Errorf("%s: description %q does not state %s parameters", tc.model, spec.Description, want)
		}
	}
}

// formatThousands writes n with comma separators, as the descriptions do.
func formatThousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestAlexNetInputSizes(t *testing.T) {
	for _, tc := range []struct {
		side    int
		pool    bool   // an avgpool layer is built
		wantErr string // "" when it builds
	}{
		{224, false, ""},
		{227, false, ""}, // 227 also gives 6x6 features
		{415, true, ""},  // 12x12 features: 2x2 average pooling
		{128, false, "3x3 features"},
		{64, false, "1x1 features"},
		{32, false, "too small"},
	} {
		net, err := Build(cpu.NewCPU(), "alexnet", Config{Classes: 10, Input: solver.Shape{C: 3, H: tc.side, W: tc.side}})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%d: error %v, want one containing %q", tc.side, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%d: %v", tc.side, err)
			continue
		}
		hasPool := false
		for _, l := range net.Layers() {
			if l.Name == "avgpool" {
				hasPool = true
				if l.Out != (solver.Shape{C: 256, H: 6, W: 6}) {
					t.Errorf("%d: avgpool output %v", tc.side, l.Out)
				}
			}
		}
		if hasPool != tc.pool {
			t.Errorf("%d: avgpool built %v, want %v", tc.side, hasPool, tc.pool)
		}
	}
}

func TestMobileNetChannels(t *testing.T) {
	for _, tc := range []struct {
		c     int
		alpha float64
		want  int
	}{
		{32, 1, 32}, {1024, 1, 1024},
		{32, 0.25, 8}, {64, 0.25, 16}, {1024, 0.25, 256},
		{64, 0.75, 48}, {32, 0.75, 24},
		{32, 0.1, 8},    // floor of 8
		{100, 0.33, 33}, // truncation: 33.0
		{100, 0.339, 33},
	} {
		if got := MobileNetChannels(tc.c, tc.alpha); got != tc.want {
			t.Errorf("MobileNetChannels(%d, %g) = %d, want %d", tc.c, tc.alpha, got, tc.want)
		}
	}
	if _, err := Build(cpu.NewCPU(), "mobilenet-v1", Config{Width: -1}); err == nil {
		t.Error("negative width built")
	}
}

// TestSmallModelsTrainStep runs one forward and backward pass of the small
// models on a batch of 32x32 inputs: the loss must be finite and every
// parameter tensor must receive a non-zero gradient.
func TestSmallModelsTrainStep(t *testing.T) {
	for _, name := range []string{"alexnet-small", "mobilenet-small"} {
		net, err := Build(cpu.NewCPU(), name, Config{})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		net.InitParams(r)
		const n = 4
		x := make([]float32, n*net.In.Size())
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		labels := []int32{0, 1, 2, 3}
		loss := solver.NewTrainer(net, nil, nil).Gradient(x, labels)
		if math.IsNaN(loss) || math.IsInf(loss, 0) || loss <= 0 {
			t.Fatalf("%s: loss %v", name, loss)
		}
		grads := make([]float32, net.Grads.Len())
		net.B.Download(grads, net.Grads)
		for _, tn := range net.Tensors() {
			var sum float64
			for _, g := range grads[tn.Off : tn.Off+tn.Spec.Size()] {
				sum += math.Abs(float64(g))
			}
			if !(sum > 0) || math.IsInf(sum, 0) {
				t.Errorf("%s: %s gradient sums to %v", name, tn.Name, sum)
			}
		}
	}
}

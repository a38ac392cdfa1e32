package solver_test

// Golden values for the structural layers, from scripts/golden_struct.py
// (regenerate with /usr/bin/python3 scripts/golden_struct.py; the tests
// never run Python). Each fixture names a layer by its graph description
// (models.Layer), so the layers are built exactly as a graph file builds
// them; the output and every input gradient are compared with PyTorch's
// under the metric of golden_test.go (relative 1e-4, floor 1e-3).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

type structCase struct {
	Case  string       `json:"case"`
	Layer models.Layer `json:"layer"`
	Ins   [][]int      `json:"ins"`
	X     [][]float32  `json:"x"`
	DY    []float32    `json:"dy"`
	Y     []float32    `json:"y"`
	DX    [][]float32  `json:"dx"`
}

func TestGoldenStructural(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden_struct", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 18 {
		t.Fatalf("%d structural fixtures, want 18 (regenerate with /usr/bin/python3 scripts/golden_struct.py)", len(files))
	}
	kinds := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx structCase
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fx.Case != strings.TrimSuffix(filepath.Base(f), ".json") {
			t.Fatalf("%s holds case %q", f, fx.Case)
		}
		kinds[fx.Layer.Kind] = true
		t.Run(fx.Case, func(t *testing.T) { runStructCase(t, &fx) })
	}
	for _, k := range []string{"transpose", "slice", "pad", "concatnd", "reshape", "reduce", "binary"} {
		if !kinds[k] {
			t.Errorf("no fixture of kind %s", k)
		}
	}
}

func runStructCase(t *testing.T, fx *structCase) {
	nodes, err := models.GraphNodes([]models.Layer{fx.Layer})
	if err != nil {
		t.Fatal(err)
	}
	l := nodes[0].Layer
	b := cpu.NewCPU()
	shapes := make([]solver.Shape, len(fx.Ins))
	for i, d := range fx.Ins {
		shapes[i] = solver.DimsShape(d)
	}
	out, err := l.Setup(shapes)
	if err != nil {
		t.Fatal(err)
	}
	n := len(fx.X[0]) / shapes[0].Size()
	l.Bind(b, nil, nil, nil)
	l.Resize(b, n)
	ins := make([]gpu.Buffer, len(fx.X))
	dins := make([]gpu.Buffer, len(fx.X))
	for i, x := range fx.X {
		ins[i] = b.Alloc(len(x))
		b.Upload(ins[i], x)
		dins[i] = nanBuffer(b, len(x))
	}
	y := nanBuffer(b, n*out.Size())
	p := &solver.Pass{B: b, N: n, Train: true, WS: b.Alloc(max(1, l.Workspace(n)))}
	l.Forward(p, y, ins)
	checkClose(t, "y", download(b, y), fx.Y)
	dy := b.Alloc(len(fx.DY))
	b.Upload(dy, fx.DY)
	l.Backward(p, dins, dy, ins, y, false)
	for i := range dins {
		checkClose(t, fmt.Sprintf("dx%d", i), download(b, dins[i]), fx.DX[i])
	}
}

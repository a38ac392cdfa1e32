package solver_test

// Golden-value tests of the sequence layers (Embedding, LSTM, GRU) against
// PyTorch 1.13's nn.Embedding, nn.LSTM and nn.GRU, from the fixtures that
// scripts/golden_seq.py writes into testdata/golden_seq (regenerate with
// /usr/bin/python3 scripts/golden_seq.py). The metric and the tolerance are
// golden_test.go's. The layers are driven directly, as there, so that the
// input gradient is checked too; runSeqGolden takes the backend, so the
// OpenCL tests (seq_golden_opencl_test.go) run the same cases.

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// seqFixture is one file of testdata/golden_seq.
type seqFixture struct {
	Case   string `json:"case"`
	Layer  string `json:"layer"`
	Config struct {
		Vocab    int  `json:"vocab"`
		Dim      int  `json:"dim"`
		Hidden   int  `json:"hidden"`
		Layers   int  `json:"layers"`
		AllSteps bool `json:"all_steps"`
	} `json:"config"`
	InShape []int                `json:"in_shape"`
	X       []float32            `json:"x"`
	Params  map[string][]float32 `json:"params"`
	Y       []float32            `json:"y"`
	DY      []float32            `json:"dy"`
	DX      []float32            `json:"dx"`
	Grads   map[string][]float32 `json:"grads"`
}

// seqGoldenCases lists the fixtures.
var seqGoldenCases = []string{"embedding", "lstm_t5", "lstm_t1", "lstm_2layer_all", "gru_t5", "gru_t1", "gru_2layer_all"}

// runSeqGolden runs one fixture on b: forward, backward, and compares y,
// dx (recurrent layers) and every parameter's gradient.
func runSeqGolden(t *testing.T, b gpu.Backend, name string) {
	raw, err := os.ReadFile(filepath.Join("testdata", "golden_seq", name+".json"))
	if err != nil {
		t.Fatalf("golden: %v (regenerate with /usr/bin/python3 scripts/golden_seq.py)", err)
	}
	var fx seqFixture
	if err := json.Unmarshal(raw, &fx); err != nil || fx.Case != name {
		t.Fatalf("golden: %s: %v (case %q)", name, err, fx.Case)
	}
	var l solver.Layer
	var in solver.Shape
	n := fx.InShape[0]
	c := fx.Config
	switch fx.Layer {
	case "embedding":
		l, in = solver.NewEmbedding("emb", c.Vocab, c.Dim), solver.Shape{C: 1, H: 1, W: fx.InShape[1]}
	case "lstm":
		l, in = solver.NewLSTM("rnn", c.Hidden, c.Layers, c.AllSteps), solver.Shape{C: fx.InShape[1], H: 1, W: fx.InShape[2]}
	case "gru":
		l, in = solver.NewGRU("rnn", c.Hidden, c.Layers, c.AllSteps), solver.Shape{C: fx.InShape[1], H: 1, W: fx.InShape[2]}
	default:
		t.Fatalf("golden: %s: layer %q", name, fx.Layer)
	}
	out, err := l.Setup([]solver.Shape{in})
	if err != nil {
		t.Fatal(err)
	}
	params := bindFromFixture(t, b, "params", l.Params(), fx.Params)
	grads := make([]gpu.Buffer, len(params))
	for i, p := range params {
		grads[i] = nanBuffer(b, p.Len())
	}
	l.Bind(b, params, grads, nil)
	l.Resize(b, n)
	p := &solver.Pass{B: b, N: n, Train: true, Rand: rand.New(rand.NewPCG(1, 2)), WS: b.Alloc(max(l.Workspace(n), 1))}
	x := b.Alloc(len(fx.X))
	b.Upload(x, fx.X)
	y := nanBuffer(b, n*out.Size())
	// Twice: a second pass on the same buffers must give the same answer
	// (nothing read that the first pass left behind).
	for range 2 {
		l.Forward(p, y, []gpu.Buffer{x})
		checkClose(t, name+" y", download(b, y), fx.Y)
		dy := b.Alloc(len(fx.DY))
		b.Upload(dy, fx.DY)
		var dx gpu.Buffer
		if fx.DX != nil {
			dx = nanBuffer(b, len(fx.X))
		}
		l.Backward(p, []gpu.Buffer{dx}, dy, []gpu.Buffer{x}, y, true)
		if dx != nil {
			checkClose(t, name+" dx", download(b, dx), fx.DX)
		}
		for i, s := range l.Params() {
			checkClose(t, name+" grad "+s.Name, download(b, grads[i]), fx.Grads[s.Name])
		}
	}
}

// TestGoldenSeq checks Embedding, LSTM and GRU against PyTorch on the CPU
// backend.
func TestGoldenSeq(t *testing.T) {
	for _, name := range seqGoldenCases {
		t.Run(name, func(t *testing.T) { runSeqGolden(t, cpu.NewCPU(), name) })
	}
}

// plainBackend is a backend with its Backend methods only: it hides the
// optional interfaces (gpu.RowGatherer), so that the layers take their
// generic paths.
type plainBackend struct{ gpu.Backend }

// TestGoldenSeqPlain checks the sequence layers' generic paths (the
// embedding's row-by-row copies) against PyTorch on the CPU backend.
func TestGoldenSeqPlain(t *testing.T) {
	for _, name := range seqGoldenCases {
		t.Run(name, func(t *testing.T) { runSeqGolden(t, plainBackend{cpu.NewCPU()}, name) })
	}
}

package models

import (
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// The language models have PyTorch's parameter counts for the same
// modules (nn.Embedding(2000, 64), nn.LSTM or nn.GRU(64, 128,
// batch_first=True), nn.Linear(128, 2000): 485,328 and 460,496, counted
// with Debian's PyTorch 1.13), take their vocabulary from Classes, and
// end in one logit per word.
func TestLMSizes(t *testing.T) {
	for model, want := range map[string]int{"lstm-lm": 485328, "gru-lm": 460496} {
		net, err := Build(cpu.NewCPU(), model, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if net.NumParams() != want || net.In != (solver.Shape{C: 1, H: 1, W: 32}) || net.Out.Size() != 2000 {
			t.Errorf("%s: %d parameters, input %v, output %v; want %d, 1x1x32, 2000", model, net.NumParams(), net.In, net.Out, want)
		}
		net, err = Build(cpu.NewCPU(), model, Config{Classes: 321, Input: solver.Shape{C: 1, H: 1, W: 5}})
		if err != nil {
			t.Fatal(err)
		}
		if emb := net.Tensors()[0]; emb.Name != "embed.weight" || emb.Dims[0] != 321 || net.Out.Size() != 321 {
			t.Errorf("%s with 321 words: first tensor %s %v, output %v", model, emb.Name, emb.Dims, net.Out)
		}
	}
}

// A description whose recurrent or embedding sizes are out of
// internal/limits is refused before any layer is made.
func TestLMGraphLimits(t *testing.T) {
	for _, d := range []Layer{
		{Kind: "embedding", Name: "e", Vocab: 0, Out: 4},
		{Kind: "embedding", Name: "e", Vocab: 1 << 30, Out: 1 << 10},
		{Kind: "lstm", Name: "r", Out: 8},
		{Kind: "gru", Name: "r", Out: 1 << 20, Layers: 4},
		{Kind: "lstm", Name: "r", Out: -1, Layers: 1},
	} {
		if _, err := GraphNodes([]Layer{d}); err == nil {
			t.Errorf("%+v: no error", d)
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// A worker reads its text through the vocabulary the hub's Welcome
// carries, and refuses, with an error rather than a panic, a vocabulary
// that is not JSON, breaks the rules or does not fit the model, a text
// worker of a model without one, and a language model on other data.
func TestWorkerLoadText(t *testing.T) {
	const train = "../../internal/corpus/licenses/train"
	words := []string{data.Unknown, "the", "license", "gnu", ","}
	v, err := data.NewVocab(words)
	if err != nil {
		t.Fatal(err)
	}
	net, err := models.Build(cpu.NewCPU(), "lstm-lm", models.Config{Classes: len(words), Input: solver.Shape{C: 1, H: 1, W: 4}})
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(net, nil, nil)
	s := &lazyShard{spec: train, i: 1, n: 2, batch: 8, model: "lstm-lm", meta: models.WithVocab(nil, v)}
	done, err := s.loadText(tr)
	if !done || err != nil || s.loader == nil {
		t.Fatalf("loadText: %v, %v", done, err)
	}
	x, labels := make([]float32, 8*4), make([]int32, 8)
	if n, _ := s.loader.Next(x, labels); n != 8 || net.CheckInput(x) != nil {
		t.Errorf("a batch of %d with ids %v", n, x)
	}
	for _, c := range []struct {
		spec string
		meta [][2]string
		want string
	}{
		{train, [][2]string{{models.MetaVocab, `["<unk>","the"`}}, "text.vocab"},
		{train, [][2]string{{models.MetaVocab, `["<unk>","the","the","a","b"]`}}, "already"},
		{train, [][2]string{{models.MetaVocab, `["<unk>","the"]`}}, "2 tokens for a model of 5"},
		{train, nil, "not a language model"},
		{"mnist", models.WithVocab(nil, v), "give text"},
	} {
		s := &lazyShard{spec: c.spec, n: 1, batch: 8, model: "lstm-lm", meta: c.meta}
		if _, err := s.loadText(tr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %v: %v, want an error saying %q", c.spec, c.meta, err, c.want)
		}
	}
}

package cli

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

const licenseText = "../../../data/testdata/text/licenses"

func TestIsText(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "images", "cat")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "notes.md")
	os.WriteFile(other, []byte("x"), 0o644)
	for spec, want := range map[string]bool{
		licenseText: true, filepath.Join(licenseText, "gpl-3-preamble.txt"): true,
		filepath.Join(dir, "images"): false, other: false, dir: false, "mnist": false,
	} {
		if got := IsText(spec); got != want {
			t.Errorf("IsText(%s) = %v, want %v", spec, got, want)
		}
	}
}

// EvalText's perplexity is exp of the mean loss, the unigram figure is
// exp of the next words' entropy; PredictNext ranks by the model's
// probabilities, never proposes <unk>, and pads a short text with <unk>.
func TestEvalAndPredictText(t *testing.T) {
	train, test, err := LoadTextData(licenseText, TextOptions{Context: 6, Holdout: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if train.Vocab() != test.Vocab() || test.Len() == 0 || train.Len() < 3*test.Len() {
		t.Fatalf("%d train, %d test samples", train.Len(), test.Len())
	}
	v := train.Vocab()
	net, err := models.Build(cpu.NewCPU(), "lstm-lm", models.Config{Classes: v.Len(), Input: solver.Shape{C: 1, H: 1, W: 6}})
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(net, nil, nil) // zero weights: every word equally likely
	p, err := EvalText(tr, test, 16)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.Perplexity-float64(v.Len())) > 1e-3*float64(v.Len()) || p.Samples != test.Len() {
		t.Errorf("uniform model: perplexity %.2f, want the vocabulary's %d (%d samples)", p.Perplexity, v.Len(), p.Samples)
	}
	if !(p.Unigram > 1 && p.Unigram < p.Perplexity) {
		t.Errorf("unigram perplexity %.2f", p.Unigram)
	}
	// Favour "license", then "gnu", through the output bias; <unk> most of all.
	bias := make([]float32, v.Len())
	bias[0], bias[v.ID("license")], bias[v.ID("gnu")] = 9, 5, 4
	for _, ts := range net.Tensors() {
		if ts.Name == "fc.bias" {
			net.B.Upload(net.B.View(net.Params, ts.Off, len(bias)), bias)
		}
	}
	next, seen, err := PredictNext(tr, v, "the GNU General Public", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(next) != 5 || next[0].Word != "license" || next[1].Word != "gnu" || next[0].Prob <= next[1].Prob || next[1].Prob < next[4].Prob {
		t.Errorf("next words %+v", next)
	}
	if len(seen) != 6 || seen[0] != "<unk>" || seen[1] != "<unk>" || seen[2] != "the" || seen[5] != "public" {
		t.Errorf("context %q", seen)
	}
	if _, _, err := PredictNext(tr, v, " ,", 5); err != nil {
		t.Errorf("punctuation is a token: %v", err)
	}
	if _, _, err := PredictNext(tr, v, "   ", 5); err == nil {
		t.Error("an empty text: no error")
	}
}

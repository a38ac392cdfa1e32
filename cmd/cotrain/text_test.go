package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// A language model through the commands: train on text builds the
// vocabulary and stores it in the weight file; eval reports perplexity
// beside the unigram figure; predict --text the next words; and text with
// an image model, an image set with a language model, or --classes with
// text are refused as usage errors.
func TestTextCommands(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "lm")
	done, _ := cotrain(t, "train", "--model", "lstm-lm", "--data", licenseTrain, "--context", "8", "--iterations", "40",
		"--batch", "32", "--optimizer", "adam", "--lr", "0.003", "--schedule", "constant", "--out", out, "--json")
	ppl, uni := done["test_perplexity"].(float64), done["unigram_perplexity"].(float64)
	if !(ppl > 1 && ppl < 2000 && uni > 1) || math.Abs(ppl-math.Exp(done["test_loss"].(float64))) > 1e-6*ppl {
		t.Errorf("done %v", done)
	}
	weights := filepath.Join(out, "weights.ctw")
	f, err := models.LoadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	v, err := models.Vocab(f.Meta, f.Config.Classes)
	if err != nil || v == nil || v.Len() != 1682 || f.Config.Input.W != 8 {
		t.Fatalf("weight file: vocabulary %v (%v), input %v", v, err, f.Config.Input)
	}
	ev, _ := cotrain(t, "eval", "--weights", weights, "--data", "../../internal/corpus/licenses/heldout", "--json")
	if ev["samples"] != float64(3774-2*8) || ev["test_perplexity"].(float64) <= 1 || ev["unigram_perplexity"].(float64) <= 1 {
		t.Errorf("eval %v", ev)
	}
	pred, _ := cotrain(t, "predict", "--weights", weights, "--text", "the GNU General Public", "--json")
	next := pred["next"].([]any)
	ctx := pred["context"].([]any)
	if len(next) != 5 || len(ctx) != 8 || ctx[7] != "public" || ctx[3] != "<unk>" {
		t.Errorf("prediction %v", pred)
	}
	for _, w := range next {
		if w.(map[string]any)["word"] == "<unk>" {
			t.Errorf("<unk> proposed: %v", next)
		}
	}
	for _, args := range [][]string{
		{"train", "--model", "lenet5", "--data", licenseTrain, "--out", filepath.Join(dir, "x")},
		{"train", "--model", "lstm-lm", "--data", licenseTrain, "--classes", "1-3", "--out", filepath.Join(dir, "x")},
		{"eval", "--weights", weights, "--data", "mnist"},
		{"predict", "--weights", weights, "--input", "x.png"},
	} {
		var so, se bytes.Buffer
		err := run(context.Background(), args, &so, &se)
		if !errors.Is(err, errUsage) {
			t.Errorf("%s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
}

// A PyTorch language model exported with torch.onnx.export (PyTorch 2.11's
// embedding+LSTM of models/onnx/testdata/torch2) is fine-tuned on text
// with the vocabulary it was trained with (--vocab, as many words as it
// predicts), which the fine-tuned file then holds; without --vocab it is
// refused, since its ids mean no words.
func TestFinetuneImportedLanguageModel(t *testing.T) {
	dir := t.TempDir()
	vocab := filepath.Join(dir, "vocab.txt")
	words := []string{"cotrain-vocab 1", "<unk>"}
	var text []string
	for i := 1; i < 50; i++ {
		words = append(words, fmt.Sprint("w", i))
	}
	for i := range 300 {
		text = append(text, fmt.Sprint("w", 1+(i*7)%49))
	}
	if err := os.WriteFile(vocab, []byte(strings.Join(words, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	txt := filepath.Join(dir, "mine.txt")
	if err := os.WriteFile(txt, []byte(strings.Join(text, " ")), 0o644); err != nil {
		t.Fatal(err)
	}
	onnxFile := "../../models/onnx/testdata/torch2/lstm_lm.onnx"
	out := filepath.Join(dir, "ft")
	done, _ := cotrain(t, "finetune", "--weights", onnxFile, "--vocab", vocab, "--data", txt, "--train-last", "all",
		"--iterations", "20", "--batch", "8", "--out", out, "--json")
	if done["test_perplexity"].(float64) <= 1 {
		t.Errorf("done %v", done)
	}
	pred, _ := cotrain(t, "predict", "--weights", filepath.Join(out, "weights.ctw"), "--text", "w1 w8 w15", "--json")
	if next := pred["next"].([]any); len(next) != 5 || !strings.HasPrefix(next[0].(map[string]any)["word"].(string), "w") {
		t.Errorf("prediction %v", pred)
	}
	var so, se bytes.Buffer
	err := run(context.Background(), []string{"finetune", "--weights", onnxFile, "--data", txt, "--out", filepath.Join(dir, "x")}, &so, &se)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--vocab") {
		t.Errorf("no --vocab: %v", err)
	}
}

// --fp16 refuses a language model of more than 2048 words: half precision
// holds its larger token ids inexactly.
func TestFP16RefusesLargeVocabulary(t *testing.T) {
	f := &models.File{Model: "lstm-lm", Config: models.Config{Classes: 3000, Input: solver.Shape{C: 1, H: 1, W: 4}}}
	if err := fitsHalf(f); err == nil || !strings.Contains(err.Error(), "2048") {
		t.Errorf("3000 words: %v", err)
	}
	f.Config.Classes = 2000
	if err := fitsHalf(f); err != nil {
		t.Errorf("2000 words: %v", err)
	}
}

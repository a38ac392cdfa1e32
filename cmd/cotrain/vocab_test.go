package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
)

// licenseTrain is the corpus of the text walkthrough (docs/text.md).
const licenseTrain = "../../internal/corpus/licenses/train"

// cotrain vocab writes the vocabulary of text, capped, that a weight file
// holds, and refuses a weight file without one.
func TestVocabCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "vocab.txt")
	done, _ := cotrain(t, "vocab", "--data", licenseTrain, "--out", out, "--max-words", "500", "--json")
	if done["words"] != float64(500) || done["unknown"].(float64) == 0 {
		t.Errorf("done %v", done)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := data.ReadVocab(f)
	if err != nil || v.Len() != 500 || v.Word(1) != "the" {
		t.Fatalf("vocab of %d words (%v), word 1 %q", v.Len(), err, v.Word(1))
	}
	// A weight file's vocabulary, and a file with none.
	lm := filepath.Join(dir, "lm.ctw")
	f2 := &models.File{Model: "lstm-lm", Config: models.Config{Classes: 500}, Meta: models.WithVocab(nil, v)}
	net, err := f2.Net(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	f2 = models.Snapshot("lstm-lm", f2.Config, net, nil)
	f2.Meta = models.WithVocab(nil, v)
	if err := models.SaveFile(lm, f2); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back.txt")
	cotrain(t, "vocab", "--weights", lm, "--out", back, "--json")
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(back)
	if !bytes.Equal(a, b) {
		t.Error("the weight file's vocabulary differs from the one it was given")
	}
	f2.Meta = nil
	if err := models.SaveFile(lm, f2); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if err := run(context.Background(), []string{"vocab", "--weights", lm, "--out", back}, &so, &se); err == nil {
		t.Error("a weight file without a vocabulary: no error")
	}
}

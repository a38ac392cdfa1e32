package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// The licence corpus of the text walkthrough (docs/text.md).
const (
	licenseTrain   = "../../internal/corpus/licenses/train"
	licenseHeldOut = "../../internal/corpus/licenses/heldout"
)

// TestTextHubAndTwoWorkerProcesses is issue 30's bar for text: a hub and 2
// workers as OS processes on loopback train lstm-lm on the training
// licences split between the workers (each the I-th half of every file),
// with the vocabulary the hub reads from --vocab and sends in the Welcome;
// all three weight files are identical, the held-out perplexity is well
// under the best unigram model's, and "the GNU General Public" is followed
// by "license" among the top 5 next words.
func TestTextHubAndTwoWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for 300 iterations; skipped with -short")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	train, err := data.LoadText(licenseTrain, data.TextOptions{Context: 1})
	if err != nil {
		t.Fatal(err)
	}
	vocab := filepath.Join(dir, "vocab.txt")
	f, err := os.Create(vocab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Vocab().WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h := start(t, ctx, "hub", hubBin, "--model", "lstm-lm", "--data", licenseHeldOut, "--vocab", vocab, "--context", "20",
		"--min-workers", "2", "--batch", "64", "--iterations", "300", "--optimizer", "adam", "--lr", "0.003", "--schedule", "constant",
		"--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--out", filepath.Join(dir, "hub"))
	addrs := h.until(t, "listening", 30*time.Second)["addrs"].([]any)
	var ws []*proc
	for i := range 2 {
		ws = append(ws, start(t, ctx, fmt.Sprintf("worker %d", i), workerBin, "--hub", addrs[0].(string), "--data", licenseTrain,
			"--shard", fmt.Sprintf("%d/2", i), "--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, fmt.Sprint("w", i))))
	}
	hubDone := h.until(t, "done", 5*time.Minute)
	sum := hubDone["weights_sha256"]
	for _, w := range ws {
		done := w.until(t, "done", time.Minute)
		if done["weights_sha256"] != sum {
			t.Errorf("%s: weights_sha256 %v, hub's %v", w.name, done["weights_sha256"], sum)
		}
		if err := <-w.done; err != nil {
			t.Errorf("%s exited: %v", w.name, err)
		}
	}
	if err := <-h.done; err != nil {
		t.Errorf("hub exited: %v", err)
	}
	ppl, uni := hubDone["test_perplexity"].(float64), hubDone["unigram_perplexity"].(float64)
	t.Logf("held-out perplexity %.2f, unigram %.2f, next-word accuracy %.4f", ppl, uni, hubDone["test_accuracy"])
	if !(ppl < 0.7*uni) {
		t.Errorf("held-out perplexity %.2f after 300 iterations, want well under the unigram model's %.2f", ppl, uni)
	}
	wf, err := models.LoadFile(hubDone["weights"].(string))
	if err != nil {
		t.Fatal(err)
	}
	net, err := wf.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	v, err := models.Vocab(wf.Meta, net.Out.Size())
	if err != nil || v == nil || v.Len() != train.Vocab().Len() {
		t.Fatalf("the final file's vocabulary: %v, %v", v, err)
	}
	next, _, err := cli.PredictNext(solver.NewTrainer(net, nil, nil), v, "the GNU General Public", 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the GNU General Public → %+v", next)
	found := false
	for _, w := range next {
		found = found || w.Word == "license"
	}
	if !found {
		t.Errorf(`"license" is not among the top 5 after "the GNU General Public": %+v`, next)
	}
}

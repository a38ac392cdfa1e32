package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/internal/browsertest"
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
	h := start(t, ctx, "hub", hubBin, "--model", "lstm-lm", "--data", licenseHeldOut, "--vocab", vocab, "--context", "12",
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

// TestTextDashboardInChromium: the dashboard of a language model's run
// shows the test perplexity (e to the held-out loss) where it shows test
// accuracy for other models, as a number and as the evaluation curve.
func TestTextDashboardInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("a hub, two workers and a browser; skipped with -short")
	}
	browser := browsertest.Chromium(t, "the text dashboard's browser test")
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	h := start(t, ctx, "hub", hubBin, "--model", "lstm-lm", "--data", licenseHeldOut, "--context", "8",
		"--min-workers", "2", "--batch", "32", "--iterations", "400", "--eval-every", "10", "--optimizer", "adam", "--lr", "0.003",
		"--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--http", "127.0.0.1:0", "--out", filepath.Join(dir, "hub"))
	addrs := h.until(t, "listening", 30*time.Second)["addrs"].([]any)
	url := h.until(t, "http", 10*time.Second)["url"].(string)
	go func() {
		for range h.events {
		}
	}()
	for i := range 2 {
		w := start(t, ctx, fmt.Sprint("worker ", i), workerBin, "--hub", addrs[0].(string), "--data", licenseTrain,
			"--shard", fmt.Sprintf("%d/2", i), "--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, fmt.Sprint("w", i)))
		go func() {
			for range w.events {
			}
		}()
	}
	tab := browsertest.Tab(t, ctx, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector("#accchart").dataset.points > 1 && /^[0-9.]+$/.test(document.querySelector("#accuracy").textContent)`,
		chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Fatalf("no perplexity shown: %v", err)
	}
	type seen struct{ Label, Value, Legend string }
	got, err := chromedp.Run(tab, chromedp.Evaluate[seen](`({Label: document.querySelector("#acclabel").textContent,
		Value: document.querySelector("#accuracy").textContent, Legend: document.querySelector("#acclegend").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	ppl, err := strconv.ParseFloat(got.Value, 64)
	if got.Label != "test perplexity" || err != nil || !(ppl > 1 && ppl < 3000) || !strings.Contains(got.Legend, "perplexity") {
		t.Errorf("the page shows %+v, want a test perplexity", got)
	}
	t.Logf("dashboard: %+v", got)
}

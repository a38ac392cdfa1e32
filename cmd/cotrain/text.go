package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// Language models in eval and predict: a model whose weight file holds a
// vocabulary (models.MetaVocab) reads text.

// evalText is cotrain eval of a language model on text: perplexity on all
// of it beside the best unigram model's on the same next words
// (cli.EvalText), with next-word accuracy.
func evalText(f *models.File, net *solver.Net, weights, spec string, batch int, asJSON bool, stdout io.Writer) error {
	v, err := models.Vocab(f.Meta, net.Out.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", weights, err)
	}
	if v == nil {
		return fmt.Errorf("%w: %s holds no vocabulary, but --data %s is text: evaluate a language model cotrain trained", errUsage, weights, spec)
	}
	ds, err := cli.LoadData(spec, cli.DataOptions{Input: net.In, Vocab: v})
	if err != nil {
		return err
	}
	p, err := cli.EvalText(solver.NewTrainer(net, nil, nil), ds.Test, batch)
	if err != nil {
		return err
	}
	if asJSON {
		return cli.NewEvents(stdout).Emit("done", map[string]any{"test_perplexity": p.Perplexity, "unigram_perplexity": p.Unigram,
			"test_accuracy": p.Accuracy, "test_loss": p.Loss, "samples": p.Samples, "split": ds.Split, "model": f.DisplayName()})
	}
	fmt.Fprintf(stdout, "%s on %s: perplexity %.2f (the best unigram model of the same words: %.2f), next-word accuracy %.4f, loss %.4f over %d next words (%s)\n",
		f.DisplayName(), spec, p.Perplexity, p.Unigram, p.Accuracy, p.Loss, p.Samples, ds.Split)
	return nil
}

// predictText is cotrain predict --text: the top next words after each
// text, by a language model.
func predictText(f *models.File, net *solver.Net, weights string, texts []string, top int, asJSON bool, stdout io.Writer) error {
	v, err := models.Vocab(f.Meta, net.Out.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", weights, err)
	}
	if v == nil {
		return fmt.Errorf("%w: --text needs a language model, and %s holds no vocabulary", errUsage, weights)
	}
	tr := solver.NewTrainer(net, nil, nil)
	ev := cli.NewEvents(stdout)
	for _, text := range texts {
		next, ctx, err := cli.PredictNext(tr, v, text, top)
		if err != nil {
			return err
		}
		if asJSON {
			if err := ev.Emit("prediction", map[string]any{"text": text, "context": ctx, "next": next}); err != nil {
				return err
			}
			continue
		}
		parts := make([]string, len(next))
		for i, w := range next {
			parts[i] = fmt.Sprintf("%s (%.3f)", w.Word, w.Prob)
		}
		fmt.Fprintf(stdout, "%s → %s\n", text, strings.Join(parts, ", "))
	}
	return nil
}

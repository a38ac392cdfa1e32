package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
)

// runVocab writes a vocabulary file (data.Vocab.WriteTo's format): built
// from text, as train and the hub build one, or the one a language model's
// weight file holds.
func runVocab(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("vocab", stderr, "cotrain vocab --data FILE.txt|DIR --out VOCAB [--max-words N] [--min-count K] | --weights FILE --out VOCAB",
		"Writes the vocabulary of text (the words of a .txt file or a folder of them, most frequent first, <unk> for the rest), "+
			"or the one a language model's weight file holds, as a vocabulary file for --vocab (train, hub).")
	spec := fs.String("data", "", "a .txt file or a folder of .txt files")
	weights := fs.String("weights", "", "a language model's weight file, instead of --data")
	out := fs.String("out", "", "the vocabulary file to write (required)")
	maxWords := fs.Int("max-words", data.DefaultMaxVocab, "the most words kept, <unk> included (the most frequent)")
	minCount := fs.Int("min-count", 1, "leave out words seen fewer times")
	asJSON := fs.Bool("json", false, "print a JSON object instead of a line")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" || (*spec == "") == (*weights == "") {
		return fmt.Errorf("%w: vocab needs --out and one of --data, --weights", errUsage)
	}
	var v *data.Vocab
	tokens, unknown := 0, 0
	if *weights != "" {
		f, err := models.LoadFile(*weights)
		if err != nil {
			return err
		}
		if v, err = models.Vocab(f.Meta, f.Config.Classes); err != nil {
			return fmt.Errorf("%s: %w", *weights, err)
		}
		if v == nil {
			return fmt.Errorf("%w: %s is not a language model: it holds no vocabulary", errUsage, *weights)
		}
	} else {
		t, err := data.LoadText(*spec, data.TextOptions{Context: 1, VocabOptions: data.VocabOptions{MaxSize: *maxWords, MinCount: *minCount}})
		if err != nil {
			return err
		}
		v = t.Vocab()
		tokens, unknown = t.Tokens()
	}
	if err := models.WriteFileAtomic(*out, func(w io.Writer) error { _, err := v.WriteTo(w); return err }); err != nil {
		return err
	}
	if *asJSON {
		return cli.NewEvents(stdout).Emit("vocab", map[string]any{"out": *out, "words": v.Len(), "tokens": tokens, "unknown": unknown})
	}
	if *weights != "" {
		fmt.Fprintf(stdout, "wrote %s: %d words, <unk> included, from %s\n", *out, v.Len(), *weights)
		return nil
	}
	fmt.Fprintf(stdout, "wrote %s: %d words, <unk> included; %d of the %d tokens read are <unk> under it\n", *out, v.Len(), unknown, tokens)
	return nil
}

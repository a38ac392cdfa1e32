package cli

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// Text data for language modelling: a --data value that is a .txt file,
// or a folder holding .txt files and no sub-folder (data.LoadText). The
// samples are Context token ids and the id of the word that follows; the
// model's classes are the vocabulary's words.

// VocabUsage and ContextUsage are the help of --vocab and --context.
const (
	VocabUsage = "text: a vocabulary file (cotrain vocab writes one) mapping words to ids; without it the vocabulary is built from the training text " +
		"(its 10,000 most frequent words, <unk> for the rest) and stored in the weight file"
	ContextUsage = "text: the words of context a new language model reads before the word it predicts (0: the model's default, 32)"
)

// IsText reports whether spec names text: a file whose name ends in .txt,
// or a folder whose entries (names starting with '.' aside) are all .txt
// files, at least one. A folder with sub-folders is images or sensor
// recordings, one sub-folder per class.
func IsText(spec string) bool {
	st, err := os.Stat(spec)
	if err != nil {
		return false
	}
	if !st.IsDir() {
		return strings.EqualFold(filepath.Ext(spec), ".txt")
	}
	_, err = data.TextFiles(spec)
	return err == nil
}

// ReadVocabFile reads a vocabulary file (data.Vocab.WriteTo's format,
// cotrain-vocab 1).
func ReadVocabFile(path string) (*data.Vocab, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cli: --vocab: %w", err)
	}
	defer f.Close()
	v, err := data.ReadVocab(f)
	if err != nil {
		return nil, fmt.Errorf("cli: --vocab %s: %w", path, err)
	}
	return v, nil
}

// TextOptions says how LoadTextData reads text.
type TextOptions struct {
	// Context is the model's context length (its input's W); 0 is
	// data.DefaultContext.
	Context int
	// Vocab maps words to ids: the model's, the hub's, or a --vocab
	// file's. nil builds one from the text (all of it, held-out tail
	// included, data.DefaultMaxVocab words at most).
	Vocab *data.Vocab
	// Holdout, above 0, holds out that fraction of the end of every file
	// to test (data.Text.SplitTail); 0 makes the whole text both Train and
	// Test.
	Holdout float64
}

// LoadTextData loads text for language modelling into Train and Test,
// with the vocabulary they use.
func LoadTextData(spec string, o TextOptions) (train, test *data.Text, err error) {
	if !(o.Holdout >= 0 && o.Holdout < 1) {
		return nil, nil, fmt.Errorf("%w: --holdout %v: want a fraction from 0 (none) up to, not including, 1", ErrUsage, o.Holdout)
	}
	all, err := data.LoadText(spec, data.TextOptions{Context: o.Context, Vocab: o.Vocab})
	if err != nil {
		return nil, nil, err
	}
	if o.Holdout == 0 {
		return all, all, nil
	}
	if train, test, err = all.SplitTail(o.Holdout); err != nil {
		return nil, nil, fmt.Errorf("cli: data %s: %w", spec, err)
	}
	return train, test, nil
}

// loadText is LoadData for text: o.Input, when set, must be a language
// model's (1×1×context ids); o.Classes must be empty (the classes are the
// words); o.Holdout holds out the end of every file (data.Text.SplitTail).
func loadText(spec string, o DataOptions) (*Data, error) {
	ctx := o.Context
	if o.Input != (solver.Shape{}) {
		if o.Input.C != 1 || o.Input.H != 1 {
			return nil, fmt.Errorf("%w: the model takes %s, but --data %s is text: train or evaluate a language model (lstm-lm, gru-lm)",
				ErrUsage, describeInput(o.Input), spec)
		}
		if ctx != 0 && ctx != o.Input.W {
			return nil, fmt.Errorf("%w: --context %d, but the model reads %d words of context", ErrUsage, ctx, o.Input.W)
		}
		ctx = o.Input.W
	}
	if len(o.Classes) > 0 {
		return nil, fmt.Errorf("%w: --classes with text: a language model's classes are its vocabulary's words", ErrUsage)
	}
	train, test, err := LoadTextData(spec, TextOptions{Context: ctx, Vocab: o.Vocab, Holdout: o.Holdout})
	if err != nil {
		return nil, err
	}
	d := &Data{Name: spec, Kind: KindText, Train: train, Test: test, Vocab: train.Vocab(), Holdout: o.Holdout}
	n, unk := train.Tokens()
	if o.Holdout == 0 {
		d.Split = fmt.Sprintf("all %d samples (%d words, %d of them <unk>)", train.Len(), n, unk)
	} else {
		m, _ := test.Tokens()
		d.Split = fmt.Sprintf("%d words to train (%d samples), the last %v of every file held out to test (%d words, %d samples, --holdout %v)",
			n, train.Len(), o.Holdout, m, test.Len(), o.Holdout)
	}
	return d, nil
}

// Perplexity is a language model's figure on held-out text, beside the
// unigram baseline on the same text.
type Perplexity struct {
	// Perplexity is exp of the mean cross-entropy of the model's
	// prediction of each sample's next word, in nats; Loss is that mean.
	Perplexity, Loss float64
	// Unigram is the perplexity of the best unigram model of the same
	// next words: exp of the entropy of their own frequencies, the lowest
	// any model that ignores the context can reach on them (one whose
	// counts came from other text does worse).
	Unigram float64
	// Accuracy is the fraction of samples whose next word ranked first.
	Accuracy float64
	// Samples is the number of next words scored.
	Samples int
}

// EvalText scores tr's network on the samples of ds (a data.Text or a
// view of one), batch at a time.
func EvalText(tr *solver.Trainer, ds data.Dataset, batch int) (Perplexity, error) {
	lab, ok := ds.(data.Labeler)
	if !ok {
		return Perplexity{}, fmt.Errorf("cli: text data %T cannot list its labels", ds)
	}
	acc, loss := tr.Evaluate(ds, batch)
	counts := map[int32]int{}
	for i := range ds.Len() {
		counts[lab.Label(i)]++
	}
	n := float64(ds.Len())
	h := 0.0
	for _, c := range counts {
		p := float64(c) / n
		h -= float64(p * math.Log(p))
	}
	return Perplexity{Perplexity: math.Exp(loss), Loss: loss, Unigram: math.Exp(h), Accuracy: acc, Samples: ds.Len()}, nil
}

// NextWord is one guess of the word that follows a text.
type NextWord struct {
	Word string  `json:"word"`
	ID   int     `json:"id"`
	Prob float64 `json:"prob"`
}

// PredictNext returns the k most probable words after text, by tr's
// network over vocabulary v. The text is tokenized as training text is
// (data.Tokenize; unknown words become data.Unknown) and its last Context
// tokens are the context; a shorter text is padded on the left with
// data.Unknown. data.Unknown itself is never proposed (a keyboard has no
// use for it); the probabilities are the model's, not renormalised without
// it. It returns the tokens of the context too, as the model saw them.
func PredictNext(tr *solver.Trainer, v *data.Vocab, text string, k int) ([]NextWord, []string, error) {
	ctx := tr.Net.In.Size()
	if v.Len() != tr.Net.Out.Size() {
		return nil, nil, fmt.Errorf("cli: a vocabulary of %d words for a model of %d classes", v.Len(), tr.Net.Out.Size())
	}
	ids := v.Encode(text)
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("%w: --text %q holds no word", ErrUsage, text)
	}
	x := make([]float32, ctx)
	seen := make([]string, ctx)
	for i := range ctx {
		j := len(ids) - ctx + i
		id := int32(0)
		if j >= 0 {
			id = ids[j]
		}
		x[i], seen[i] = float32(id), v.Word(id)
	}
	if err := tr.Net.CheckInput(x); err != nil {
		return nil, nil, err
	}
	classes := tr.Net.Out.Size()
	logits := make([]float32, classes)
	tr.Net.B.Download(logits, tr.Logits(x, 1))
	p := softmax64(logits)
	order := make([]int, 0, classes)
	for i := 1; i < classes; i++ { // 0 is data.Unknown
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	out := make([]NextWord, 0, k)
	for _, i := range order[:min(k, len(order))] {
		out = append(out, NextWord{Word: v.Word(int32(i)), ID: i, Prob: p[i]})
	}
	return out, seen, nil
}

// softmax64 is the softmax of v in float64.
func softmax64(v []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, float64(x))
	}
	out := make([]float64, len(v))
	s := 0.0
	for i, x := range v {
		out[i] = math.Exp(float64(x) - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// prepareText is PrepareModel for text: a language model (its first layer
// an embedding) sized to the vocabulary. A new model's vocabulary is the
// --vocab file's, or built from the training text; its context is
// --context, or the model's default (32 words). A fine-tuned one keeps its
// file's vocabulary and context (words it does not know become <unk>); a
// file without one (an imported PyTorch model) takes --vocab's, of as many
// words as it predicts, and the weight files written record it.
func prepareText(f ModelFlags, b gpu.Backend, rng *rand.Rand) (*Setup, error) {
	if f.Normalize != "" {
		return nil, fmt.Errorf("%w: --normalize with text: token ids are not normalised", ErrUsage)
	}
	var vocab *data.Vocab
	var err error
	if f.Vocab != "" {
		if vocab, err = ReadVocabFile(f.Vocab); err != nil {
			return nil, err
		}
	}
	s := &Setup{}
	o := DataOptions{Holdout: f.Holdout, Classes: f.Classes, Context: f.Context, Vocab: vocab}
	if f.Weights != "" {
		if s.File, err = LoadModel(f.Weights, ""); err != nil {
			return nil, err
		}
		cfg := s.File.Resolved()
		if err := readsText(s.File); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Weights, err)
		}
		fv, err := models.Vocab(s.File.Meta, cfg.Classes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Weights, err)
		}
		switch {
		case fv == nil && vocab == nil:
			return nil, fmt.Errorf("%w: %s holds no vocabulary, so its ids mean no words: give the one it was trained with (--vocab FILE)", ErrUsage, f.Weights)
		case fv == nil && vocab.Len() != cfg.Classes:
			return nil, fmt.Errorf("%w: --vocab %s has %d words, %s predicts %d", ErrUsage, f.Vocab, vocab.Len(), f.Weights, cfg.Classes)
		case fv == nil:
			fv = vocab // an imported model (a PyTorch export): its vocabulary is the user's
		}
		if vocab != nil && !slices.Equal(vocab.Words(), fv.Words()) {
			return nil, fmt.Errorf("%w: --vocab %s is not the vocabulary of %s, which a fine-tuned model keeps: leave --vocab out", ErrUsage, f.Vocab, f.Weights)
		}
		o.Vocab, o.Input = fv, cfg.Input
		if s.Data, err = LoadData(f.Data, o); err != nil {
			return nil, err
		}
		if s.Net, err = s.File.Build(b); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Weights, err)
		}
		if err := TrainLast(s.Net, f.TrainLast); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		return s, nil
	}
	spec, err := models.Lookup(f.Model)
	if err != nil {
		return nil, err
	}
	if f.Width != 0 {
		return nil, fmt.Errorf("%w: --width with text: model %s has no width multiplier", ErrUsage, f.Model)
	}
	cfg := spec.Resolve(models.Config{})
	if err := readsText(&models.File{Model: f.Model, Config: cfg}); err != nil {
		return nil, err
	}
	if o.Context == 0 {
		o.Context = cfg.Input.W
	}
	if s.Data, err = LoadData(f.Data, o); err != nil {
		return nil, err
	}
	cfg.Classes, cfg.Input = s.Data.Vocab.Len(), solver.Shape{C: 1, H: 1, W: o.Context}
	s.File = &models.File{Model: f.Model, Config: cfg}
	if s.Net, err = models.Build(b, f.Model, cfg); err != nil {
		return nil, err
	}
	s.Net.InitParams(rng)
	return s, nil
}

// readsText refuses a model whose first layer is not an embedding: only a
// language model takes token ids.
func readsText(f *models.File) error {
	_, nodes, err := models.FileNodes(f)
	if err != nil {
		return err
	}
	if _, ok := nodes[0].Layer.(*solver.Embedding); !ok {
		return fmt.Errorf("%w: model %s does not read text (its first layer is %s, not an embedding): train a language model (lstm-lm, gru-lm) on text",
			ErrUsage, f.DisplayName(), nodes[0].Layer.Kind())
	}
	return nil
}

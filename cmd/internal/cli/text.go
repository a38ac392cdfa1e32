package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/solver"
)

// Text data for language modelling: a --data value that is a .txt file,
// or a folder holding .txt files and no sub-folder (data.LoadText). The
// samples are Context token ids and the id of the word that follows; the
// model's classes are the vocabulary's words.

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
		h -= p * math.Log(p)
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

package models

import (
	"fmt"

	"github.com/cotrain/cotrain/solver"
)

// The word-level language models: a sample is Context token ids (Input
// 1×1×Context, as data.Text writes them) and the label is the next token's
// id, so Classes is the vocabulary's size, taken from the data. The
// default context is data.DefaultContext (32); the vocabulary's default
// (2,000) is only a placeholder for listings: the data always sets it.
var lm = Config{Classes: 2000, Input: solver.Shape{C: 1, H: 1, W: 32}}

// LM sizes: a 64-wide embedding and 128 hidden units, small enough that a
// phone trains a step over a batch of 32 contexts of 32 words in about a
// tenth of a second on one CPU core (BenchmarkLSTMStep), large enough to
// learn a few thousand words' worth of text well below a unigram model's
// perplexity.
const (
	lmEmbed  = 64
	lmHidden = 128
)

func init() {
	register(Spec{
		Name: "lstm-lm",
		Description: fmt.Sprintf("next-word LSTM: embedding %d, LSTM %d (last step), linear over the vocabulary "+
			"(%d parameters with 2,000 words)", lmEmbed, lmHidden, lmParams(2000, 4)),
		Default: lm,
		layers:  func(c Config) ([]solver.Node, error) { return lmNodes(c, solver.LSTMCell) },
	})
	register(Spec{
		Name: "gru-lm",
		Description: fmt.Sprintf("next-word GRU: embedding %d, GRU %d (last step), linear over the vocabulary "+
			"(%d parameters with 2,000 words)", lmEmbed, lmHidden, lmParams(2000, 3)),
		Default: lm,
		layers:  func(c Config) ([]solver.Node, error) { return lmNodes(c, solver.GRUCell) },
	})
}

// lmParams counts a language model's parameters for vocab words and a cell
// of gates gates.
func lmParams(vocab, gates int) int {
	return vocab*lmEmbed + gates*lmHidden*(lmEmbed+lmHidden+2) + lmHidden*vocab + vocab
}

// lmNodes is embedding, one recurrent layer of cell and a linear layer
// over the vocabulary (c.Classes words); the embedding's vocabulary is the
// same c.Classes.
func lmNodes(c Config, cell solver.Cell) ([]solver.Node, error) {
	rnn := solver.NewLSTM("rnn", lmHidden, 1, false)
	rnn.Cell = cell
	return Stack(
		solver.NewEmbedding("embed", c.Classes, lmEmbed),
		rnn,
		solver.NewLinear("fc", c.Classes),
	), nil
}

package models

import (
	"encoding/json"
	"fmt"

	"github.com/cotrain/cotrain/data"
)

// MetaVocab is the File.Meta key of a language model's vocabulary: the
// JSON array of its tokens by id (data.Vocab.Words, data.Unknown first).
// It is one of the entries that define the model (DefiningMeta), so a hub
// sends it to every worker in the Welcome, every node's final weight file
// holds it, and predict and eval need no vocabulary file. A language
// model's labels are token ids, so it records no class names (MetaLabels):
// a worker cannot know the words before the hub sends them.
const MetaVocab = "text.vocab"

// WithVocab returns meta recording v.
func WithVocab(meta [][2]string, v *data.Vocab) [][2]string {
	b, _ := json.Marshal(v.Words()) // a []string always marshals
	return SetMeta(meta, MetaVocab, string(b))
}

// Vocab returns the vocabulary meta records for a model of the given class
// count, or nil when it records none. A list that is not JSON, of another
// length than classes, or that breaks data.NewVocab's rules (Unknown
// first, distinct tokens without white space, at most data.MaxVocabSize of
// them) is an error wrapping ErrMeta. The raw value is bounded by where it
// came from (a weight file's 64 MiB string, a Welcome's frame); the length
// is checked against classes before the words are indexed.
func Vocab(meta [][2]string, classes int) (*data.Vocab, error) {
	raw := MetaValue(meta, MetaVocab)
	if raw == "" {
		return nil, nil
	}
	var words []string
	if err := json.Unmarshal([]byte(raw), &words); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMeta, MetaVocab, err)
	}
	if len(words) != classes {
		return nil, fmt.Errorf("%w: a vocabulary of %d tokens for a model of %d classes (one per token)", ErrMeta, len(words), classes)
	}
	v, err := data.NewVocab(words)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMeta, err)
	}
	return v, nil
}

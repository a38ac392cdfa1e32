package data

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unknown is the token every word outside a vocabulary maps to; it has id 0
// in every Vocab.
const Unknown = "<unk>"

// Vocabulary limits. DefaultMaxVocab is the cap BuildVocab applies when
// VocabOptions.MaxSize is 0: 10,000 words, the classic word-level language
// modelling size (the Penn Treebank set of Mikolov et al.), which keeps an
// output layer of hidden×10,000 weights small enough to train on a phone.
// MaxVocabSize caps any vocabulary built or read; MaxTokenBytes caps one
// token of a vocabulary file.
const (
	DefaultMaxVocab = 10000
	MaxVocabSize    = 1 << 20
	MaxTokenBytes   = 256
)

// Tokenize splits text into word-level tokens, the choice cotrain makes for
// next-word prediction (a keyboard predicts words, and a word vocabulary
// keeps the model's input and output layers the size of that vocabulary):
//
//   - text is lower-cased (Unicode simple case mapping);
//   - a word is a run of letters, digits and combining marks, with an
//     apostrophe (' or ’) kept inside it when letters follow ("licensee's"
//     and "don't" are one token each; the curly one becomes ');
//   - every other character that is not white space is a token of its own
//     (punctuation split: "free," is "free" and ",");
//   - white space separates tokens and is dropped.
//
// So "The GNU General Public License, v3." is the, gnu, general, public,
// license, ",", v3, ".". Tokens never contain white space, so a vocabulary
// file can hold one a line. Invalid UTF-8 bytes become U+FFFD tokens; the
// text loaders refuse such files before tokenizing.
func Tokenize(text string) []string {
	var out []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			out = append(out, word.String())
			word.Reset()
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case isWordRune(r):
			word.WriteRune(unicode.ToLower(r))
		case (r == '\'' || r == '’') && word.Len() > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i+1]):
			word.WriteRune('\'')
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			out = append(out, string(unicode.ToLower(r)))
		}
	}
	flush()
	return out
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// Vocab maps tokens to ids 0..Len()-1 and back. Id 0 is Unknown; the others
// are in the order the vocabulary was built (most frequent first) or read.
// A Vocab is immutable and safe for concurrent use.
type Vocab struct {
	words []string
	index map[string]int32
}

// VocabOptions says which tokens BuildVocab keeps.
type VocabOptions struct {
	// MaxSize caps the vocabulary, Unknown included; 0 means
	// DefaultMaxVocab. The most frequent tokens are kept.
	MaxSize int
	// MinCount drops tokens seen fewer times (0 or 1 keeps all).
	MinCount int
}

// BuildVocab returns the vocabulary of tokens: Unknown, then the distinct
// tokens by descending count, ties in byte order (so the same text gives
// the same ids everywhere), cut to opt.MaxSize and to tokens seen at least
// opt.MinCount times. A token spelled "<unk>" in the text counts as
// Unknown; tokens longer than MaxTokenBytes are left out (they map to
// Unknown), so every vocabulary can be written and read back.
func BuildVocab(tokens []string, opt VocabOptions) (*Vocab, error) {
	size := opt.MaxSize
	if size == 0 {
		size = DefaultMaxVocab
	}
	if size < 2 || size > MaxVocabSize {
		return nil, errorf(ErrInvalid, "data: vocab: size %d, want 2 to %d (Unknown and at least one word)", size, MaxVocabSize)
	}
	if opt.MinCount < 0 {
		return nil, errorf(ErrInvalid, "data: vocab: minimum count %d, want 0 or more", opt.MinCount)
	}
	counts := map[string]int{}
	for _, t := range tokens {
		counts[t]++
	}
	delete(counts, Unknown)
	words := make([]string, 0, len(counts))
	for w, c := range counts {
		if c >= opt.MinCount && len(w) <= MaxTokenBytes {
			words = append(words, w)
		}
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	if len(words) > size-1 {
		words = words[:size-1]
	}
	if len(words) == 0 {
		return nil, errorf(ErrInvalid, "data: vocab: no token seen %d times or more", opt.MinCount)
	}
	return newVocab(append([]string{Unknown}, words...)), nil
}

func newVocab(words []string) *Vocab {
	v := &Vocab{words: words, index: make(map[string]int32, len(words))}
	for i, w := range words {
		v.index[w] = int32(i)
	}
	return v
}

// Len returns the number of tokens, Unknown included.
func (v *Vocab) Len() int { return len(v.words) }

// ID returns the id of token, 0 (Unknown) when it is not in v.
func (v *Vocab) ID(token string) int32 { return v.index[token] } // a missing key gives 0

// Word returns the token of id (0 <= id < Len()); it panics otherwise.
func (v *Vocab) Word(id int32) string { return v.words[id] }

// Words returns the tokens in id order. The caller may modify the slice.
func (v *Vocab) Words() []string { return append([]string(nil), v.words...) }

// Encode tokenizes text (Tokenize) and returns the ids; unknown words map
// to 0.
func (v *Vocab) Encode(text string) []int32 {
	toks := Tokenize(text)
	ids := make([]int32, len(toks))
	for i, t := range toks {
		ids[i] = v.ID(t)
	}
	return ids
}

// vocabMagic is the first line of a vocabulary file, with its version.
const vocabMagic = "cotrain-vocab 1"

// WriteTo writes v in the vocabulary file format (the --vocab file):
//
//	cotrain-vocab 1
//	<unk>
//	the
//	,
//	...
//
// UTF-8 text: the first line names the format and its version; then one
// token a line, the token of id k on line k+2, Unknown first. Tokens hold
// no white space (Tokenize never makes one that does), so no quoting is
// needed and the file reads well in an editor and a diff.
func (v *Vocab) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	n, _ := bw.WriteString(vocabMagic + "\n")
	total := int64(n)
	for _, t := range v.words {
		n, _ = bw.WriteString(t + "\n")
		total += int64(n)
	}
	if err := bw.Flush(); err != nil {
		return total, fmt.Errorf("data: vocab: %w", err)
	}
	return total, nil
}

// ReadVocab reads a vocabulary file written by WriteTo. It refuses, with
// an error wrapping ErrFormat that names the line, a missing or other
// version line, a first token other than Unknown, an empty token, one with
// white space or invalid UTF-8, one longer than MaxTokenBytes, a duplicate,
// and more than MaxVocabSize tokens — it reads no further than that, so a
// hostile file costs at most MaxVocabSize short lines.
func ReadVocab(r io.Reader) (*Vocab, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxTokenBytes+len(vocabMagic)+2) // cap(nil) = 0: the max rules
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, errorf(ErrFormat, "data: vocab: line 1: %v", err)
		}
		return nil, errorf(ErrFormat, "data: vocab: empty, want the line %q first", vocabMagic)
	}
	if got := strings.TrimSuffix(sc.Text(), "\r"); got != vocabMagic {
		return nil, errorf(ErrFormat, "data: vocab: line 1 is %.40q, want %q", got, vocabMagic)
	}
	var words []string
	seen := map[string]int{}
	for line := 2; sc.Scan(); line++ {
		t := strings.TrimSuffix(sc.Text(), "\r")
		if len(words) == MaxVocabSize {
			return nil, errorf(ErrFormat, "data: vocab: line %d: more than %d tokens", line, MaxVocabSize)
		}
		if len(words) == 0 && t != Unknown {
			return nil, errorf(ErrFormat, "data: vocab: line 2 is %.40q, want %q (id 0)", t, Unknown)
		}
		if msg := badToken(len(words), t); msg != "" {
			return nil, errorf(ErrFormat, "data: vocab: line %d: %s", line, msg)
		}
		if seen[t] > 0 {
			return nil, errorf(ErrFormat, "data: vocab: line %d: token %q already on line %d", line, t, seen[t])
		}
		seen[t] = line
		words = append(words, t)
	}
	if err := sc.Err(); err != nil {
		return nil, errorf(ErrFormat, "data: vocab: line %d: %v (a token is at most %d bytes)", len(words)+2, err, MaxTokenBytes)
	}
	if len(words) < 2 {
		return nil, errorf(ErrFormat, "data: vocab: %d tokens, want %s and at least one word", len(words), Unknown)
	}
	return newVocab(words), nil
}

// badToken says what is wrong with t as the token of id k of a
// vocabulary, or "" when nothing is (duplicates are the caller's check).
func badToken(k int, t string) string {
	switch {
	case t == "":
		return "an empty token"
	case !utf8.ValidString(t):
		return "invalid UTF-8"
	case len(t) > MaxTokenBytes:
		return fmt.Sprintf("a token of %d bytes (at most %d)", len(t), MaxTokenBytes)
	case strings.IndexFunc(t, unicode.IsSpace) >= 0:
		return fmt.Sprintf("token %q holds white space", t)
	case k == 0 && t != Unknown:
		return fmt.Sprintf("%.40q first, want %q (id 0)", t, Unknown)
	}
	return ""
}

// NewVocab returns the vocabulary whose token of id k is words[k], under
// ReadVocab's rules: Unknown first, then at least one word, at most
// MaxVocabSize tokens, none empty, with white space or invalid UTF-8, longer
// than MaxTokenBytes or repeated. It is how a vocabulary that travelled as
// a list (a model file's meta, a hub's Welcome) becomes a Vocab again;
// every rule is checked before the index is built.
func NewVocab(words []string) (*Vocab, error) {
	if len(words) < 2 || len(words) > MaxVocabSize {
		return nil, errorf(ErrFormat, "data: vocab: %d tokens, want %s, at least one word and at most %d in all", len(words), Unknown, MaxVocabSize)
	}
	seen := make(map[string]int, len(words))
	for k, t := range words {
		if msg := badToken(k, t); msg != "" {
			return nil, errorf(ErrFormat, "data: vocab: token %d: %s", k, msg)
		}
		if j, ok := seen[t]; ok {
			return nil, errorf(ErrFormat, "data: vocab: token %d: %q is already token %d", k, t, j)
		}
		seen[t] = k
	}
	return newVocab(slices.Clone(words)), nil
}

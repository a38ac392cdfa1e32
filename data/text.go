package data

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cotrain/cotrain/internal/limits"
)

// DefaultContext is the context length (tokens a model sees before the one
// it predicts) when TextOptions.Context is 0: 32 words, a few sentences,
// more than the 20–35 steps word-level LSTM language models are usually
// unrolled over, and short enough that backpropagation through time fits a
// phone's memory.
const DefaultContext = 32

// DefaultMaxTextBytes caps the text read when TextOptions.MaxBytes is 0:
// 256 MiB in all, each file checked from its size before it is read.
const DefaultMaxTextBytes = 256 << 20

// TextOptions says how LoadText cuts text into (context, next token)
// samples.
type TextOptions struct {
	// Context is the number of tokens before the predicted one; 0 means
	// DefaultContext. Stride is the step between the starts of consecutive
	// samples; 0 means 1 (every token with a full context before it is
	// predicted once).
	Context, Stride int
	// Vocab maps tokens to ids. nil means build one from the text loaded
	// with VocabOptions (do that for the training text, on the hub, and
	// hand its Vocab to every other load, so that all agree).
	Vocab        *Vocab
	VocabOptions VocabOptions
	// MaxBytes caps the bytes read in all; 0 means DefaultMaxTextBytes.
	MaxBytes int64
}

// Text is a language-modelling data set: token ids of one or more
// documents, cut into samples of Context ids followed by the id to
// predict. Sample i is a window of Context+1 consecutive tokens of one
// document (windows never span two files); Get writes the first Context ids
// as float32 values (exact: ids are below MaxVocabSize, far under 2^24) and
// returns the last as the label. Shape is (1, 1, Context); Classes is the
// vocabulary's size. So a Loader's batch of Text is N×Context ids with N
// next-token labels, and Shard, Subset and FilterClasses take it as they
// take images.
//
// Text is immutable and safe for concurrent use.
type Text struct {
	ids     []int32 // every document's ids, one after another
	docs    []span  // where each document's ids lie in ids
	first   []int   // first[k]: samples before document k; first[len(docs)] = Len()
	context int
	stride  int
	vocab   *Vocab
	names   []string // the files, in order
}

type span struct{ off, n int }

var (
	_ Dataset = (*Text)(nil)
	_ Labeler = (*Text)(nil)
)

// LoadText loads path, a .txt file or a folder of them, for language
// modelling. A folder's files are those directly in it whose names end in
// .txt, read in sorted order; names starting with '.' are skipped; a
// sub-folder or another file is an error (a folder with sub-folders is an
// image or sensor data set, one sub-folder per class). Every file must be
// UTF-8. Text is split by Tokenize and mapped through opt.Vocab, or through
// a vocabulary built from it.
//
// Hostile input: sizes are checked before reading (opt.MaxBytes, in all),
// invalid UTF-8 is refused naming the file and byte offset, and a text too
// short for one sample is an error.
func LoadText(path string, opt TextOptions) (*Text, error) {
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultMaxTextBytes
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	files, err := TextFiles(path)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(files))
	left := opt.MaxBytes
	for i, f := range files {
		if texts[i], err = readText(f, left); err != nil {
			return nil, err
		}
		left -= int64(len(texts[i]))
	}
	t, err := NewText(files, texts, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// check refuses a context or stride out of internal/limits and a negative
// byte limit.
func (opt TextOptions) check() error {
	if _, err := limits.Extent("context", int64(opt.Context), false); err != nil {
		return fmt.Errorf("data: text: %w", err)
	}
	if _, err := limits.Extent("stride", int64(opt.Stride), false); err != nil {
		return fmt.Errorf("data: text: %w", err)
	}
	if opt.MaxBytes < 0 {
		return errorf(ErrInvalid, "data: text: limit %d bytes, want 0 (the default) or more", opt.MaxBytes)
	}
	return nil
}

// NewText is LoadText of documents already in memory: texts[i] is the
// text of the document named names[i] (what Files returns). The texts are
// UTF-8 (invalid bytes become U+FFFD tokens); opt.MaxBytes caps their
// total size as it caps what LoadText reads.
func NewText(names, texts []string, opt TextOptions) (*Text, error) {
	if opt.Context == 0 {
		opt.Context = DefaultContext
	}
	if opt.Stride == 0 {
		opt.Stride = 1
	}
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultMaxTextBytes
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	if len(names) != len(texts) {
		return nil, errorf(ErrInvalid, "data: text: %d names for %d documents", len(names), len(texts))
	}
	total := int64(0)
	for _, s := range texts {
		total += int64(len(s))
	}
	if total > opt.MaxBytes {
		return nil, errorf(ErrTooLarge, "data: text: %d bytes, more than the limit of %d", total, opt.MaxBytes)
	}
	docs := make([][]string, len(texts))
	for i, s := range texts {
		docs[i] = Tokenize(s)
	}
	v := opt.Vocab
	if v == nil {
		var all []string
		for _, d := range docs {
			all = append(all, d...)
		}
		var err error
		if v, err = BuildVocab(all, opt.VocabOptions); err != nil {
			return nil, err
		}
	}
	ids := make([][]int32, len(docs))
	for i, d := range docs {
		ids[i] = make([]int32, len(d))
		for k, w := range d {
			ids[i][k] = v.ID(w)
		}
	}
	t := newText(ids, slices.Clone(names), opt.Context, opt.Stride, v)
	if t.Len() == 0 {
		return nil, errorf(ErrInvalid, "data: text: no file holds more than %d tokens (the context)", opt.Context)
	}
	return t, nil
}

// newText lays the documents' ids out one after another and counts each
// one's samples.
func newText(docs [][]int32, names []string, context, stride int, v *Vocab) *Text {
	t := &Text{context: context, stride: stride, vocab: v, names: names, first: []int{0}}
	for _, d := range docs {
		t.docs = append(t.docs, span{off: len(t.ids), n: len(d)})
		t.ids = append(t.ids, d...)
		n := 0
		if len(d) > context {
			n = (len(d)-context-1)/stride + 1
		}
		t.first = append(t.first, t.first[len(t.first)-1]+n)
	}
	return t
}

// Part returns part i of n (0 <= i < n) of t: the i-th of n contiguous,
// equal (to a token) pieces of every document, as documents of their own.
// It is how text is sharded among workers, each one's part being text of
// its own (data.Shard would give every shard windows of all the text, each
// overlapping others' by all but a word). A part with no sample is an error.
func (t *Text) Part(i, n int) (*Text, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, errorf(ErrInvalid, "data: text part %d/%d: want 0 <= i < n", i, n)
	}
	var docs [][]int32
	for _, d := range t.docs {
		lo, hi := d.n*i/n, d.n*(i+1)/n
		docs = append(docs, t.ids[d.off+lo:d.off+hi])
	}
	p := newText(docs, t.names, t.context, t.stride, t.vocab)
	if p.Len() == 0 {
		return nil, errorf(ErrInvalid, "data: text part %d/%d: no piece of a document holds more than %d tokens (the context)", i, n, t.context)
	}
	return p, nil
}

// SplitTail holds out the end of every document: the last fraction
// holdout (0 < holdout < 1) of each one's tokens, rounded down, is a
// document of test, the rest one of train. No window of test shares a
// token with a window of train, so a language model is tested on text it
// never saw (a random subset of the windows, as images are split, would
// test on contexts that overlap the training ones by all but a word). A
// split that leaves either part without a sample is an error.
func (t *Text) SplitTail(holdout float64) (train, test *Text, err error) {
	if !(holdout > 0 && holdout < 1) {
		return nil, nil, errorf(ErrInvalid, "data: text: holdout %v, want a fraction between 0 and 1", holdout)
	}
	var a, b [][]int32
	for _, d := range t.docs {
		ids := t.ids[d.off : d.off+d.n]
		cut := d.n - int(holdout*float64(d.n))
		a, b = append(a, ids[:cut]), append(b, ids[cut:])
	}
	train = newText(a, t.names, t.context, t.stride, t.vocab)
	test = newText(b, t.names, t.context, t.stride, t.vocab)
	if train.Len() == 0 || test.Len() == 0 {
		return nil, nil, errorf(ErrInvalid, "data: text: holding out %v of %d tokens leaves %d samples to train on and %d to test (a sample needs %d tokens)",
			holdout, len(t.ids), train.Len(), test.Len(), t.context+1)
	}
	return train, test, nil
}

// TextFiles returns the files LoadText reads for path: path itself when it
// is a file, else the .txt files directly in the folder, sorted.
func TextFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("data: text: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("data: text: %w", err)
	}
	var files []string
	for _, e := range entries {
		name := filepath.Join(path, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case e.IsDir():
			return nil, errorf(ErrInvalid, "data: text: %s is a folder: a text folder holds .txt files only (a folder of class sub-folders is images or sensor recordings)", name)
		case !strings.HasSuffix(e.Name(), ".txt"):
			return nil, errorf(ErrInvalid, "data: text: %s is not a .txt file", name)
		default:
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		return nil, errorf(ErrInvalid, "data: text: %s holds no .txt file", path)
	}
	sort.Strings(files)
	return files, nil
}

// readText reads the UTF-8 file at path, refusing it from its size when it
// holds more than limit bytes.
func readText(path string, limit int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("data: text: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("data: text: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", errorf(ErrInvalid, "data: text: %s is not a regular file", path)
	}
	if st.Size() > limit {
		return "", errorf(ErrTooLarge, "data: text: %s holds %d bytes, more than the %d left of the limit", path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", fmt.Errorf("data: text: %w", err)
	}
	if int64(len(b)) > limit {
		return "", errorf(ErrTooLarge, "data: text: %s grew past the %d bytes left of the limit while it was read", path, limit)
	}
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		return "", errorf(ErrFormat, "data: text: %s: byte %d is not UTF-8 (convert the file, e.g. iconv -t UTF-8)", path, off)
	}
	return string(b), nil
}

// Len returns the number of samples.
func (t *Text) Len() int { return t.first[len(t.first)-1] }

// Shape returns (1, 1, Context).
func (t *Text) Shape() (c, h, w int) { return 1, 1, t.context }

// Classes returns the vocabulary's size: labels are token ids.
func (t *Text) Classes() int { return t.vocab.Len() }

// Vocab returns the vocabulary mapping tokens to ids.
func (t *Text) Vocab() *Vocab { return t.vocab }

// Files returns the files read, in order.
func (t *Text) Files() []string { return append([]string(nil), t.names...) }

// Tokens returns the number of tokens read, and how many of them are
// Unknown (words outside the vocabulary).
func (t *Text) Tokens() (n, unknown int) {
	for _, id := range t.ids {
		if id == 0 {
			unknown++
		}
	}
	return len(t.ids), unknown
}

// window returns the Context+1 ids of sample i.
func (t *Text) window(i int) []int32 {
	if i < 0 || i >= t.Len() {
		panic(fmt.Sprintf("data: Text: sample %d of %d", i, t.Len()))
	}
	k := sort.Search(len(t.docs), func(k int) bool { return t.first[k+1] > i })
	off := t.docs[k].off + (i-t.first[k])*t.stride
	return t.ids[off : off+t.context+1]
}

// Label returns the id sample i predicts.
func (t *Text) Label(i int) int32 { return t.window(i)[t.context] }

// Get writes the Context ids of sample i into dst as float32 values and
// returns the id of the token that follows them. It panics if i is out of
// range or len(dst) != Context.
func (t *Text) Get(i int, dst []float32) int32 {
	if len(dst) != t.context {
		panic(fmt.Sprintf("data: Text.Get: dst has %d floats, want %d", len(dst), t.context))
	}
	w := t.window(i)
	for k, id := range w[:t.context] {
		dst[k] = float32(id)
	}
	return w[t.context]
}

package data

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// SplitTail holds out the end of every document: the test part's samples
// are windows of the last tokens only, the train part's of the others, and
// no token lies in both.
func TestTextSplitTail(t *testing.T) {
	const ctx = 4
	ds, err := LoadText("testdata/text/licenses", TextOptions{Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := ds.SplitTail(0.25)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := ds.Tokens()
	a, _ := train.Tokens()
	b, _ := test.Tokens()
	if a+b != all || b > all/4 || b < all/4-2 {
		t.Errorf("%d + %d tokens of %d, want a quarter (rounded down per file) held out", a, b, all)
	}
	if train.Vocab() != ds.Vocab() || test.Vocab() != ds.Vocab() {
		t.Error("the parts have another vocabulary")
	}
	// The first test sample of the first file is its tokens at the cut.
	n0 := ds.docs[0].n
	cut := n0 - int(0.25*float64(n0))
	dst := make([]float32, ctx)
	label := test.Get(0, dst)
	want := ds.ids[cut : cut+ctx+1]
	got := append(slices.Clone(dst), float32(label))
	for k := range got {
		if got[k] != float32(want[k]) {
			t.Fatalf("first test sample %v, want %v", got, want)
		}
	}
	if train.Len() != (cut-ctx)+(ds.docs[1].n-int(0.25*float64(ds.docs[1].n))-ctx) {
		t.Errorf("train has %d samples", train.Len())
	}
	for _, h := range []float64{0, 1, -0.1, 0.9999} {
		if _, _, err := ds.SplitTail(h); !errors.Is(err, ErrInvalid) {
			t.Errorf("holdout %v: %v, want ErrInvalid", h, err)
		}
	}
}

// NewVocab takes a list under ReadVocab's rules.
func TestNewVocab(t *testing.T) {
	v, err := NewVocab([]string{Unknown, "the", "license", ","})
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != 4 || v.ID("license") != 2 || v.ID("gnu") != 0 || v.Word(3) != "," {
		t.Errorf("vocab %v", v.Words())
	}
	for _, words := range [][]string{
		nil, {Unknown}, {"the", Unknown}, {Unknown, "the", "the"}, {Unknown, ""}, {Unknown, "a b"},
		{Unknown, "\xff"}, {Unknown, strings.Repeat("x", MaxTokenBytes+1)},
	} {
		if _, err := NewVocab(words); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v, want ErrFormat", words, err)
		}
	}
}

// Part cuts every document into n contiguous pieces: the parts share no
// token and together hold every one.
func TestTextPart(t *testing.T) {
	ds, err := NewText([]string{"a", "b"}, []string{
		"one two three four five six seven eight nine ten eleven twelve",
		"alpha beta gamma delta epsilon zeta eta theta iota kappa",
	}, TextOptions{Context: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	total := 0
	for i := range 3 {
		p, err := ds.Part(i, 3)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := p.Tokens()
		total += n
		var words []string
		for _, d := range p.docs {
			for _, id := range p.ids[d.off : d.off+d.n] {
				words = append(words, p.Vocab().Word(id))
			}
			words = append(words, "|")
		}
		got = append(got, words)
	}
	if total != 22 || strings.Join(got[0], " ") != "one two three four | alpha beta gamma |" ||
		strings.Join(got[2], " ") != "nine ten eleven twelve | eta theta iota kappa |" {
		t.Errorf("parts %q (%d tokens)", got, total)
	}
	if _, err := ds.Part(3, 3); !errors.Is(err, ErrInvalid) {
		t.Errorf("part 3/3: %v", err)
	}
	if _, err := ds.Part(0, 6); !errors.Is(err, ErrInvalid) {
		t.Errorf("parts of 2 tokens for a context of 2: %v", err)
	}
}

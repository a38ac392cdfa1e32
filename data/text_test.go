package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"The GNU General Public License, v3.", []string{"the", "gnu", "general", "public", "license", ",", "v3", "."}},
		{"  Licensee's  don't\n'quoted' x'", []string{"licensee's", "don't", "'", "quoted", "'", "x", "'"}},
		{"program--to (and charge)", []string{"program", "-", "-", "to", "(", "and", "charge", ")"}},
		{"ÉTÉ Straße naïve 3.0 don’t", []string{"été", "straße", "naïve", "3", ".", "0", "don't"}},
		{"<https://fsf.org/>", []string{"<", "https", ":", "/", "/", "fsf", ".", "org", "/", ">"}},
		{" \t\n", nil},
	} {
		if got := Tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The vocabulary of the GPL-3 excerpt: frequency order, <unk> first,
// capped, unknown words to 0, and a file round trip that keeps every id.
func TestVocabOnGPL3(t *testing.T) {
	b, err := os.ReadFile("testdata/text/licenses/gpl-3-preamble.txt")
	if err != nil {
		t.Fatal(err)
	}
	toks := Tokenize(string(b))
	v, err := BuildVocab(toks, VocabOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, w := range toks {
		counts[w]++
	}
	words := v.Words()
	if words[0] != Unknown || v.Len() != len(counts)+1 {
		t.Fatalf("vocab of %d starting %q, want %d starting %q", v.Len(), words[0], len(counts)+1, Unknown)
	}
	for i := 2; i < len(words); i++ {
		if c, p := counts[words[i]], counts[words[i-1]]; c > p || (c == p && words[i] < words[i-1]) {
			t.Fatalf("ids %d, %d: %q (%d) after %q (%d), want descending counts, ties in byte order", i-1, i, words[i-1], p, words[i], c)
		}
	}
	if got := v.Encode("the GNU General Public zebra"); got[0] != v.ID("the") || got[4] != 0 || got[3] == 0 {
		t.Errorf("Encode: %v (zebra must be 0, public known)", got)
	}
	if v.ID("license") == 0 || v.Word(v.ID("license")) != "license" {
		t.Errorf("license has id %d", v.ID("license"))
	}
	small, err := BuildVocab(toks, VocabOptions{MaxSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if small.Len() != 10 || !slices.Equal(small.Words()[1:], words[1:10]) {
		t.Errorf("capped to 10: %q, want <unk> and the 9 most frequent %q", small.Words(), words[1:10])
	}
	if small.ID("preamble") != 0 {
		t.Error("a rare word outside the capped vocabulary has an id")
	}
	twice, err := BuildVocab(toks, VocabOptions{MinCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range twice.Words()[1:] {
		if counts[w] < 2 {
			t.Errorf("MinCount 2 kept %q, seen %d times", w, counts[w])
		}
	}
	var buf bytes.Buffer
	if _, err := v.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "cotrain-vocab 1\n<unk>\n,\nthe\n") {
		t.Errorf("file starts %q", buf.String()[:40])
	}
	back, err := ReadVocab(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Words(), words) {
		t.Error("the vocabulary read back differs")
	}
}

func TestReadVocabHostile(t *testing.T) {
	for _, tc := range []struct{ file, say string }{
		{"", "empty"},
		{"cotrain-vocab 2\n<unk>\nthe\n", `line 1 is "cotrain-vocab 2"`},
		{"cotrain-vocab 1\nthe\n<unk>\n", "line 2 is \"the\", want \"<unk>\""},
		{"cotrain-vocab 1\n<unk>\nthe\na\nthe\n", `line 5: token "the" already on line 3`},
		{"cotrain-vocab 1\n<unk>\n\n", "line 3: an empty token"},
		{"cotrain-vocab 1\n<unk>\na b\n", `line 3: token "a b" holds white space`},
		{"cotrain-vocab 1\n<unk>\n\xff\n", "line 3: invalid UTF-8"},
		{"cotrain-vocab 1\n<unk>\n" + strings.Repeat("x", 300) + "\n", "a token is at most 256 bytes"},
		{"cotrain-vocab 1\n<unk>\n", "1 tokens"},
	} {
		_, err := ReadVocab(strings.NewReader(tc.file))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%.30q: %v, want ErrFormat saying %q", tc.file, err, tc.say)
		}
	}
	// CRLF files (an editor on Windows) read as LF ones.
	v, err := ReadVocab(strings.NewReader("cotrain-vocab 1\r\n<unk>\r\nthe\r\n"))
	if err != nil || v.ID("the") != 1 {
		t.Errorf("CRLF: %v", err)
	}
}

// The two license excerpts as a folder: samples are the context then the
// next token, never across the two files, and a Loader yields them as
// batches of ids with next-token labels.
func TestLoadTextLicenses(t *testing.T) {
	const ctx = 5
	ds, err := LoadText("testdata/text/licenses", TextOptions{Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	files := ds.Files()
	if len(files) != 2 || filepath.Base(files[0]) != "apache-2.0-head.txt" {
		t.Fatalf("files %v", files)
	}
	var docs [][]int32
	for _, f := range files {
		b, _ := os.ReadFile(f)
		docs = append(docs, ds.Vocab().Encode(string(b)))
	}
	if want := len(docs[0]) - ctx + len(docs[1]) - ctx; ds.Len() != want {
		t.Fatalf("%d samples, want %d", ds.Len(), want)
	}
	if c, h, w := ds.Shape(); c != 1 || h != 1 || w != ctx || ds.Classes() != ds.Vocab().Len() {
		t.Errorf("shape %d×%d×%d, %d classes", c, h, w, ds.Classes())
	}
	dst := make([]float32, ctx)
	check := func(i int, doc []int32, off int) {
		t.Helper()
		label := ds.Get(i, dst)
		for k := range ctx {
			if dst[k] != float32(doc[off+k]) {
				t.Fatalf("sample %d context %v, want ids %v", i, dst, doc[off:off+ctx])
			}
		}
		if label != doc[off+ctx] || ds.Label(i) != label {
			t.Fatalf("sample %d label %d (Label %d), want %d", i, label, ds.Label(i), doc[off+ctx])
		}
	}
	n0 := len(docs[0]) - ctx
	check(0, docs[0], 0)
	check(n0-1, docs[0], n0-1) // the last sample of the first file
	check(n0, docs[1], 0)      // the first of the second
	check(ds.Len()-1, docs[1], len(docs[1])-ctx-1)
	// "the GNU General Public" is followed by "license" in the GPL.
	v := ds.Vocab()
	found := false
	for i := range ds.Len() {
		ds.Get(i, dst)
		if dst[1] == float32(v.ID("gnu")) && dst[2] == float32(v.ID("general")) && dst[3] == float32(v.ID("public")) && dst[4] == float32(v.ID("license")) {
			found = found || dst[0] == float32(v.ID("the"))
		}
	}
	if !found {
		t.Error(`no sample holds "the gnu general public license"`)
	}
	l := NewLoader(ds, 8, 3, true)
	x, labels := make([]float32, 8*ctx), make([]int32, 8)
	if n, _ := l.Next(x, labels); n != 8 {
		t.Errorf("batch of %d", n)
	}
	// A stride and a vocabulary handed in (a worker's load): words the
	// hub's vocabulary lacks map to <unk>.
	gpl, err := LoadText("testdata/text/licenses/gpl-3-preamble.txt", TextOptions{Context: ctx, Stride: 3})
	if err != nil {
		t.Fatal(err)
	}
	apache, err := LoadText("testdata/text/licenses/apache-2.0-head.txt", TextOptions{Context: ctx, Stride: 3, Vocab: gpl.Vocab()})
	if err != nil {
		t.Fatal(err)
	}
	if want := (len(docs[0])-ctx-1)/3 + 1; apache.Len() != want {
		t.Errorf("stride 3: %d samples, want %d", apache.Len(), want)
	}
	n, unk := apache.Tokens()
	if unk == 0 || unk == n || apache.Vocab() != gpl.Vocab() {
		t.Errorf("Apache text through the GPL's vocabulary: %d of %d tokens unknown, want some but not all", unk, n)
	}
	apache.Get(1, dst) // sample 1 starts at token 3
	if dst[0] != float32(gpl.Vocab().ID(ds.Vocab().Word(docs[0][3]))) {
		t.Errorf("stride 3, sample 1 starts with id %v", dst[0])
	}
}

func TestLoadTextHostile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		opt   TextOptions
		kind  error
		say   string
	}{
		{"utf8", map[string]string{"a.txt": "caf\xe9 au lait"}, TextOptions{Context: 1}, ErrFormat, "a.txt: byte 3 is not UTF-8"},
		{"subfolder", map[string]string{"a.txt": "a b c", "cls/b.txt": "x"}, TextOptions{Context: 1}, ErrInvalid, "a text folder holds .txt files only"},
		{"other file", map[string]string{"a.txt": "a b c", "b.md": "x"}, TextOptions{Context: 1}, ErrInvalid, "b.md is not a .txt file"},
		{"too large", map[string]string{"a.txt": "a b c", "b.txt": "d e f g h"}, TextOptions{Context: 1, MaxBytes: 8}, ErrTooLarge, "b.txt holds 9 bytes, more than the 3 left"},
		{"short", map[string]string{"a.txt": "a b c"}, TextOptions{Context: 3}, ErrInvalid, "no file holds more than 3 tokens"},
		{"empty folder", map[string]string{".hidden.txt": "a b c"}, TextOptions{}, ErrInvalid, "holds no .txt file"},
		{"context", map[string]string{"a.txt": "a b c"}, TextOptions{Context: -2}, nil, "context -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadText(writeFiles(t, tc.files), tc.opt)
			if err == nil || (tc.kind != nil && !errors.Is(err, tc.kind)) || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("error %v, want %v saying %q", err, tc.kind, tc.say)
			}
		})
	}
}

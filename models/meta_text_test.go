package models

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/data"
)

// A vocabulary recorded in meta comes back as the same Vocab, is among
// the defining entries (the Welcome and every final file carry it), and a
// broken or mismatched one is refused with ErrMeta.
func TestMetaVocab(t *testing.T) {
	v, err := data.NewVocab([]string{data.Unknown, "the", "gnu", "license"})
	if err != nil {
		t.Fatal(err)
	}
	meta := WithVocab([][2]string{{"iterations", "3"}}, v)
	got, err := Vocab(meta, 4)
	if err != nil || got == nil || got.Len() != 4 || got.ID("gnu") != 2 {
		t.Fatalf("Vocab = %v, %v", got, err)
	}
	if d := DefiningMeta(meta); len(d) != 1 || d[0][0] != MetaVocab {
		t.Errorf("DefiningMeta = %v", d)
	}
	if got, err := Vocab(nil, 4); got != nil || err != nil {
		t.Errorf("no vocabulary: %v, %v", got, err)
	}
	for _, raw := range []string{`["<unk>","the"`, `{"a":1}`, `["<unk>","the","the","x"]`, `["the","<unk>","a","b"]`, `["<unk>","a","b"]`} {
		if _, err := Vocab([][2]string{{MetaVocab, raw}}, 4); !errors.Is(err, ErrMeta) {
			t.Errorf("%s: %v, want ErrMeta", raw, err)
		}
	}
}

package data

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// FuzzReadVocab feeds arbitrary bytes to ReadVocab: it must never panic,
// and a vocabulary it accepts survives a WriteTo/ReadVocab round trip with
// <unk> at id 0.
func FuzzReadVocab(f *testing.F) {
	f.Add([]byte("cotrain-vocab 1\n<unk>\nthe\n,\n"))
	f.Add([]byte("cotrain-vocab 1\r\n<unk>\r\nthe\r\n"))
	f.Add([]byte("cotrain-vocab 1\n<unk>\nthe\nthe\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := ReadVocab(bytes.NewReader(in))
		if err != nil {
			return
		}
		if v.Word(0) != Unknown || v.ID(Unknown) != 0 {
			t.Fatalf("accepted a vocabulary whose id 0 is %q", v.Word(0))
		}
		var buf bytes.Buffer
		if _, err := v.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadVocab(&buf)
		if err != nil || !slices.Equal(back.Words(), v.Words()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzReadTable feeds arbitrary text to the recording reader (the CSV of
// LoadSensorFolder and the rows of UCI HAR): it must never panic, and what
// it accepts is a rectangle of finite values.
func FuzzReadTable(f *testing.F) {
	f.Add("x,y,z\n0.1,0.2,9.8\n0.3,-0.1,9.7\n", true)
	f.Add("1,2\n3\n", true)
	f.Add("1,NaN\n", false)
	if b, err := os.ReadFile("testdata/uci-har/train/Inertial Signals/body_acc_x_train.txt"); err == nil {
		f.Add(string(b), false)
	}
	f.Fuzz(func(t *testing.T, in string, comma bool) {
		split := strings.Fields
		if comma {
			split = splitComma
		}
		names, vals, cols, err := readTable(strings.NewReader(in), "fuzz", split, comma)
		if err != nil {
			return
		}
		if cols < 1 || len(vals)%cols != 0 || (names != nil && len(names) != cols) {
			t.Fatalf("%d values in %d columns, %d names", len(vals), cols, len(names))
		}
		for _, v := range vals {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("accepted %v", v)
			}
		}
	})
}

// FuzzTokenize: tokens are never empty and never hold white space, so a
// vocabulary file needs no quoting.
func FuzzTokenize(f *testing.F) {
	f.Add("The GNU General Public License, v3. Licensee's don’t")
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokenize(s) {
			if tok == "" || strings.IndexFunc(tok, unicode.IsSpace) >= 0 {
				t.Fatalf("token %q of %q", tok, s)
			}
		}
	})
}

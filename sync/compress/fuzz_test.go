package compress

import (
	"errors"
	"slices"
	"testing"
)

// FuzzDecode feeds arbitrary payloads to Decode for vectors of up to 4096
// values. It checks that nothing panics, that every error wraps one of the
// package's sentinels, that an accepted payload holds only finite values,
// and that a sparse payload it accepts re-encodes (AppendSparse) to one
// that decodes to the same vector.
//
//	go test ./sync/compress -run '^$' -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	src := gradLike(300, 1)
	for _, name := range []string{"none", "fp16", "int8", "topk:0.05"} {
		c, _ := Parse(name)
		f.Add(c.Append(nil, src), uint16(300), uint8(0))
		f.Add(c.Append(nil, src[:3]), uint16(3), uint8(c.Format()))
	}
	f.Add([]byte{4, 3, 2, 0, 0, 60, 0, 0, 60}, uint16(3), uint8(4))
	f.Add([]byte{4, 3, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 60}, uint16(3), uint8(0))
	f.Add([]byte{3, 1, 0, 0, 0x80, 0x7f, 1}, uint16(1), uint8(3))
	f.Fuzz(func(t *testing.T, p []byte, n uint16, want uint8) {
		dst := make([]float32, int(n)%4097)
		err := Decode(dst, p, Format(want))
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrLength) && !errors.Is(err, ErrNonFinite) {
				t.Fatalf("error %v wraps none of the package's sentinels", err)
			}
			return
		}
		for i, v := range dst {
			if nonFinite(v) {
				t.Fatalf("accepted a payload with value %d = %v", i, v)
			}
		}
		if Format(p[0]) == FormatSparse {
			again := make([]float32, len(dst))
			if err := Decode(again, AppendSparse(nil, dst), FormatSparse); err != nil || !slices.Equal(again, dst) {
				t.Fatalf("re-encoded sparse payload: %v, same: %v", err, slices.Equal(again, dst))
			}
		}
	})
}

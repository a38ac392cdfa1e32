package wire

import (
	"errors"
	"strconv"
	"testing"
)

// A float vector's byte count is checked in 64 bits: over 4 GiB (what a
// msgpack bin holds) on a 64-bit build, over 2 GiB on a 32-bit one (run this
// test under qemu-arm, as .ci/run does), it is ErrTooLarge, never an
// overflowed int.
func TestBinLenLimits(t *testing.T) {
	is32 := strconv.IntSize == 32
	for _, tc := range []struct {
		n      int
		ok     bool // on a 64-bit build
		ok32   bool // on a 32-bit build
		nBytes int
	}{
		{0, true, true, 0},
		{431080, true, true, 4 * 431080},
		{1<<29 - 1, true, true, 1<<31 - 4},
		{1 << 29, true, false, 0},
		{maxBin / 4, true, true, 4 * (maxBin / 4)},
		{maxBin/4 + 1, false, false, 0},
	} {
		ok := tc.ok
		if is32 {
			ok = tc.ok32
		}
		got, err := binLen(tc.n)
		switch {
		case ok && (err != nil || (tc.nBytes != 0 && got != tc.nBytes)):
			t.Errorf("binLen(%d) on %d-bit = %d, %v; want %d bytes", tc.n, strconv.IntSize, got, err, tc.nBytes)
		case !ok && !errors.Is(err, ErrTooLarge):
			t.Errorf("binLen(%d) on %d-bit = %d, %v; want ErrTooLarge", tc.n, strconv.IntSize, got, err)
		}
	}
}

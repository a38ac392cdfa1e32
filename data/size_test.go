package data

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A file whose header promises exactly 2 GiB of data is read on (here: found
// truncated) by a 64-bit build and refused by a 32-bit one, whose ints stop
// a byte short: an error, not an overflow or a failed allocation. CI runs
// this under qemu-arm.
func TestTwoGiBHeadersOn32Bit(t *testing.T) {
	want := "truncated"
	if strconv.IntSize == 32 {
		want = "promises more than 2147483647 bytes"
	}
	_, _, err := ReadIDX(bytes.NewReader(idxBytes(8, []uint32{1 << 15, 1 << 8, 1 << 8}, []byte{1, 2, 3})), 3)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
		t.Errorf("IDX of 2^31 bytes on %d-bit: %v, want ErrFormat saying %q", strconv.IntSize, err, want)
	}
	h := "{'descr': '<f4', 'fortran_order': False, 'shape': (16384, 32768), }\n"
	npy := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	npy = append(append(npy, h...), 0, 0, 0, 0)
	_, _, err = ReadNPY(bytes.NewReader(npy))
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
		t.Errorf("NPY of 2^31 bytes on %d-bit: %v, want ErrFormat saying %q", strconv.IntSize, err, want)
	}
}

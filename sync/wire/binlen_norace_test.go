//go:build !race

package wire

import (
	"errors"
	"io"
	"testing"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// This test is left out of race builds: the race detector turns on
// checkptr, which refuses its slice header of maxBin/4+1 floats over one
// ("unsafe.Slice result straddles multiple allocations") before the
// encoder is reached. go test without -race, and .ci/run's 32-bit run under
// qemu-arm, run it.

// Encoding a vector one value longer than maxBin/4 fails before reading any
// of it. The vector is a slice header over one float: a real one would need
// 2 or 4 GiB of memory, and the encoder must not touch its values.
func TestEncodeVectorOverMaxBin(t *testing.T) {
	var x float32
	huge := Floats(unsafe.Slice(&x, maxBin/4+1))
	err := msgpack.NewEncoder(io.Discard).Encode(huge)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("encoding %d values: %v, want ErrTooLarge", len(huge), err)
	}
}

//go:build !386 && !arm && !mips && !mipsle

// The cases are issue 28's 64-bit sizes (2^60-11, 2^62+7, 2^32, ...),
// which a 32-bit int cannot hold: on a 32-bit build they do not compile,
// and such values are refused where they are decoded.

package gpu

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/internal/limits"
)

// TestGeomLimits: geometries whose sizes overflow or exceed internal/limits
// are refused by Setup (issue 28: pads of 2^60-11 made OH·OW wrap around
// and the CPU convolution slice out of range; 2^62+7 rows made im2col
// write out of bounds).
func TestGeomLimits(t *testing.T) {
	for _, g := range []ConvGeom{
		{C: 1, H: 28, W: 28, K: 6, R: 5, S: 5, PadH: 1<<60 - 11, PadW: 1<<60 - 11},
		{C: 1, H: 1<<62 + 7, W: 4, K: 1, R: 3, S: 3, PadH: 1, PadW: 1},
		{C: 1 << 32, H: 28, W: 28, K: 6, R: 5, S: 5},
		{C: 1 << 16, H: 1 << 10, W: 1 << 10, K: 1, R: 1, S: 1}, // 2^36 inputs a sample
		{C: 1, H: 28, W: 28, K: 6, R: 5, S: 5, StrideH: 1 << 40},
	} {
		if err := g.Setup(); !errors.Is(err, ErrGeometry) || !errors.Is(err, limits.ErrTooLarge) {
			t.Errorf("%+v: %v, want ErrGeometry and limits.ErrTooLarge", g, err)
		}
	}
	for _, g := range []PoolGeom{
		{C: 1, H: 1<<62 + 7, W: 4, KH: 2, KW: 2},
		{C: 16, H: 1 << 20, W: 1 << 20, KH: 2, KW: 2},
		{C: 1, H: 28, W: 28, KH: 2, KW: 2, StrideH: 1 << 40, StrideW: 2},
		{C: 1, H: 28, W: 28, KH: 1 << 12, KW: 2, DilH: 1 << 13}, // a dilated window of 2^25 rows
	} {
		if err := g.Setup(); !errors.Is(err, ErrGeometry) || !errors.Is(err, limits.ErrTooLarge) {
			t.Errorf("%+v: %v, want ErrGeometry and limits.ErrTooLarge", g, err)
		}
	}
	ok := ConvGeom{C: 3, H: 224, W: 224, K: 64, R: 7, S: 7, StrideH: 2, StrideW: 2, PadH: 3, PadW: 3}
	if err := ok.Setup(); err != nil || ok.OH != 112 {
		t.Errorf("ResNet's stem: %v, OH %d", err, ok.OH)
	}
}

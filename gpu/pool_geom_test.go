package gpu

import (
	"errors"
	"testing"
)

// TestPoolGeomDilation: a dilated window's output size is PyTorch's (sizes
// printed by F.max_pool2d in PyTorch 1.13), and a window that reads only
// padding is refused (PyTorch would output -inf there).
func TestPoolGeomDilation(t *testing.T) {
	for _, tc := range []struct {
		g      PoolGeom
		oh, ow int
	}{
		{PoolGeom{C: 1, H: 13, W: 13, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 2, DilW: 2, CeilMode: true}, 6, 6},
		{PoolGeom{C: 1, H: 4, W: 4, KH: 2, KW: 2, StrideH: 1, StrideW: 1, DilH: 2, DilW: 3}, 2, 1},
		{PoolGeom{C: 1, H: 1, W: 20, KH: 1, KW: 3, StrideH: 1, StrideW: 2, PadW: 1, DilW: 3, CeilMode: true}, 1, 9},
		{PoolGeom{C: 1, H: 10, W: 11, KH: 3, KW: 2, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 2, DilW: 3, CeilMode: true}, 5, 6},
	} {
		g := tc.g
		if err := g.Setup(); err != nil || g.OH != tc.oh || g.OW != tc.ow {
			t.Errorf("%+v: %v, output %dx%d; want %dx%d", tc.g, err, g.OH, g.OW, tc.oh, tc.ow)
		}
	}
	// One input row, padding 1, two taps 2 apart: rows -1 and 1, neither
	// in the input.
	g := PoolGeom{C: 1, H: 1, W: 4, KH: 2, KW: 1, PadH: 1, StrideH: 1, StrideW: 1, DilH: 2}
	if err := g.Setup(); !errors.Is(err, ErrGeometry) {
		t.Errorf("a window of padding only: %v, want ErrGeometry", err)
	}
}

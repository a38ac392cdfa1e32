package gputest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// torchPool is one case of testdata/pool_torch.json (scripts/pool_torch.py):
// a pooling geometry, PyTorch's output and input gradient for x and dy.
type torchPool struct {
	Name                       string
	Max                        bool
	N, C, H, W, KH, KW, SH, SW int
	PH, PW, DH, DW, OH, OW     int
	Ceil, Incl                 bool
	X, DY, Y, DX               []float64
}

// checkPoolTorch checks max and average pooling, forward and backward,
// against PyTorch's values (testdata/pool_torch.json): dilated windows with
// padding and ceil mode, 2-D and 1-D (H = 1), ties among the maxima, and
// undilated ceil-mode windows beside them; to 1e-5 relative to max(1,
// |PyTorch's|) (a window's mean is a few roundings from it).
func checkPoolTorch(t *testing.T, b gpu.Backend) {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "testdata", "pool_torch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []torchPool
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		g := gpu.PoolGeom{N: c.N, C: c.C, H: c.H, W: c.W, KH: c.KH, KW: c.KW, StrideH: c.SH, StrideW: c.SW,
			PadH: c.PH, PadW: c.PW, DilH: c.DH, DilW: c.DW, CeilMode: c.Ceil, CountIncludePad: c.Incl}
		if err := g.Setup(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if g.OH != c.OH || g.OW != c.OW {
			t.Errorf("%s: output %dx%d, PyTorch's %dx%d", c.Name, g.OH, g.OW, c.OH, c.OW)
			continue
		}
		x, dy := upload(b, f32(c.X)), upload(b, f32(c.DY))
		y, dx := b.Alloc(len(c.Y)), b.Alloc(len(c.X))
		if c.Max {
			b.MaxPoolForward(g, y, x)
			b.MaxPoolBackward(g, dx, dy, x)
		} else {
			b.AvgPoolForward(g, y, x)
			b.AvgPoolBackward(g, dx, dy)
		}
		ys, dxs := download(b, y), download(b, dx)
		near(t, c.Name+" forward", ys, c.Y, 1e-5)
		near(t, c.Name+" backward", dxs, c.DX, 1e-5)
		t.Logf("%s: max error %.2g forward, %.2g backward", c.Name, maxErr(ys, c.Y), maxErr(dxs, c.DX))
	}
}

// f32 rounds v to float32.
func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

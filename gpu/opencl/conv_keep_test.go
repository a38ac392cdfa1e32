//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// clColGeoms are im2col and col2im's edge cases; N is the batch x holds.
// Most have at least 32 columns and a sample's group at least 32 elements,
// the sizes from which im2col_win and col2im_planes run.
var clColGeoms = []gpu.ConvGeom{
	{N: 3, C: 3, H: 31, W: 29, K: 4, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2}, // AlexNet conv1, small
	{N: 2, C: 4, H: 13, W: 11, K: 4, R: 3, S: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2},   // rectangular, mixed strides
	{N: 2, C: 6, H: 9, W: 9, K: 4, R: 3, S: 3, Groups: 2, PadH: 1, PadW: 1},                  // groups
	{N: 2, C: 2, H: 10, W: 7, K: 2, R: 5, S: 2, StrideH: 1, StrideW: 3, PadH: 2, PadW: 1},    // odd widths, stride 3
	{N: 2, C: 3, H: 12, W: 12, K: 3, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2},   // padding wider than a step
	{N: 3, C: 5, H: 9, W: 9, K: 6, R: 5, S: 5, PadH: 2, PadW: 2},                             // 5×5 same
	{N: 2, C: 3, H: 6, W: 5, K: 4, R: 3, S: 3},                                               // 24 columns: one item per element
	{N: 4, C: 1, H: 6, W: 5, K: 4, R: 3, S: 3, PadW: 1},                                      // planes of 20: work-groups span samples
	{N: 2, C: 4, H: 7, W: 33, K: 4, R: 7, S: 1, StrideH: 1, StrideW: 1, PadH: 3, Groups: 2},  // tall filter, groups
}

// im2colRef is the CPU's column matrix of cnt samples from sample n0 of
// group gi, laid out as the OpenCL kernels write it (samples side by side).
func im2colRef(g gpu.ConvGeom, x []float32, n0, cnt, gi int) []float32 {
	cg, rows, ohw := g.C/g.GroupCount(), g.ColRows(), g.OH*g.OW
	one := make([]float32, rows*ohw)
	out := make([]float32, rows*cnt*ohw)
	for n := 0; n < cnt; n++ {
		start := ((n0+n)*g.C + gi*cg) * g.H * g.W
		gputest.Im2col(g, one, x[start:start+cg*g.H*g.W])
		for row := 0; row < rows; row++ {
			copy(out[(row*cnt+n)*ohw:], one[row*ohw:(row+1)*ohw])
		}
	}
	return out
}

// TestOpenCLIm2colWin checks the batched im2col kernels against the CPU's
// im2col, bit for bit (they copy), for every block size of im2col_win (one
// filter row per item, the default, whole windows), for chunks that start
// inside the batch and the column buffer, and against the kernels it
// replaced (im2col_planes, im2col), which must still agree.
func TestOpenCLIm2colWin(t *testing.T) { bothStorages(t, testOpenCLIm2colWin) }

func testOpenCLIm2colWin(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, g := range clColGeoms {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		xv := forStorage(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
		x := o.buf(o.Alloc(len(xv)))
		o.Upload(x, xv)
		rows, ohw := g.ColRows(), g.OH*g.OW
		const coloff = 5
		col := o.buf(o.Alloc(coloff + rows*g.N*ohw))
		for gi := 0; gi < g.GroupCount(); gi++ {
			for _, chunk := range [][2]int{{0, g.N}, {1, g.N - 1}} {
				n0, cnt := chunk[0], chunk[1]
				want := im2colRef(g, xv, n0, cnt, gi)
				xoff := x.off + (n0*g.C+gi*(g.C/g.GroupCount()))*g.H*g.W
				for _, taps := range []int{1, 32, 1 << 20} {
					cols := newIm2col(o)
					cols.winTaps = taps
					o.Fill(col, float32(math.NaN()))
					cols.expand(&g, rows, cnt, ohw, col.m, col.off+coloff, x.m, xoff)
					got := download(o, col)[coloff : coloff+len(want)]
					requireSameBits(t, fmt.Sprintf("%+v group %d samples %d+%d taps %d", g, gi, n0, cnt, taps), got, want)
				}
				// The kernels im2col_win replaced write the same.
				for _, k := range []kernelID{kIm2colPlanes, kIm2col} {
					o.Fill(col, float32(math.NaN()))
					args := append([]any{col.m, col.off + coloff, x.m, xoff}, colArgs(g, cnt)...)
					if k == kIm2col {
						o.run1(k, rows*cnt*ohw, args...)
					} else {
						o.runPlanes(k, ohw, rows, cnt, args...)
					}
					got := download(o, col)[coloff : coloff+len(want)]
					requireSameBits(t, fmt.Sprintf("%+v group %d: %s", g, gi, k), got, want)
				}
			}
		}
	}
}

// TestOpenCLCol2imPlanes checks col2im over planes (and its stride-1 twin)
// against the one-item-per-element col2im bit for bit: the same entries
// added in the same order.
func TestOpenCLCol2imPlanes(t *testing.T) { bothStorages(t, testOpenCLCol2imPlanes) }

func testOpenCLCol2imPlanes(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, g := range clColGeoms {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		rows, ohw, cg := g.ColRows(), g.OH*g.OW, g.C/g.GroupCount()
		col := o.buf(o.Alloc(rows * g.N * ohw))
		o.Upload(col, gputest.Rand(r, col.n))
		want, got := o.buf(o.Alloc(g.N*g.C*g.H*g.W)), o.buf(o.Alloc(g.N*g.C*g.H*g.W))
		for _, b := range []*clBuf{want, got} {
			o.Fill(b, float32(math.NaN()))
		}
		for gi := 0; gi < g.GroupCount(); gi++ {
			off := gi * cg * g.H * g.W
			o.run1(kCol2im, g.N*cg*g.H*g.W, append([]any{want.m, want.off + off, col.m, col.off}, colArgs(g, g.N)...)...)
			o.cols.col2im(&g, g.N, got.m, got.off+off, col.m, col.off)
		}
		requireSameBits(t, fmt.Sprintf("%+v", g), download(o, got), download(o, want))
	}
}

func requireSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %g, want %g", what, i, got[i], want[i])
		}
	}
}

// TestOpenCLConvKeepColumns checks ConvColumnKeeper: a forward that keeps
// its column matrices and the filter gradient that reads them give the bits
// of ConvForward and ConvBackwardFilter (groups, strides, bias or none, a
// batch smaller than the buffer was asked for, a workspace that holds the
// whole batch or one sample at a time), the filter gradient
// launches no im2col, and there are no kept matrices where there is no
// column matrix or no room.
func TestOpenCLConvKeepColumns(t *testing.T) { bothStorages(t, testOpenCLConvKeepColumns) }

func testOpenCLConvKeepColumns(t *testing.T, o *OpenCL) {
	setWinograd(t, o, WinogradOff) // the im2col path (TestOpenCLWinogradKeptColumns: Winograd's)
	r := rand.New(rand.NewPCG(45, 46))
	for _, g := range append(clColGeoms, clConvGeoms...) {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		capN := g
		capN.N++
		cols := o.ConvKeepColumns(capN)
		if g.Depthwise() || g.Pointwise() {
			if cols != nil {
				t.Errorf("%+v: kept columns of %d elements for a convolution without a column matrix", g, cols.Len())
			}
			continue
		}
		if cols == nil || cols.Len() != g.GroupCount()*g.ColRows()*capN.N*g.OH*g.OW {
			t.Fatalf("%+v: kept columns %v", g, cols)
		}
		x, w := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows())
		o.Upload(x, forStorage(o, gputest.Rand(r, x.Len())))
		o.Upload(w, forStorage(o, gputest.Rand(r, w.Len())))
		dy := o.Alloc(g.N * g.K * g.OH * g.OW)
		o.Upload(dy, forStorage(o, gputest.Rand(r, dy.Len())))
		bias := o.Alloc(g.K)
		o.Upload(bias, forStorage(o, gputest.Rand(r, g.K)))
		per := g.ColRows() * g.OH * g.OW
		for _, tc := range []struct {
			ws gpu.Buffer
			b  gpu.Buffer
		}{
			{o.Alloc(o.ConvWorkspace(g)), bias}, // the whole batch at once
			{o.Alloc(o.ConvWorkspace(g)), nil},
			{o.Alloc(per + 1), bias}, // chunks of one sample
		} {
			ws, b := tc.ws, tc.b
			var out [2][3][]float32 // y, dw, db; plain then kept
			for k := range out {
				y, dw, db := o.Alloc(dy.Len()), o.Alloc(w.Len()), o.Alloc(g.K)
				for _, z := range []gpu.Buffer{y, dw, db} {
					o.Fill(z, float32(math.NaN()))
				}
				var dbias gpu.Buffer
				if b != nil {
					dbias = db
				}
				if k == 0 {
					o.ConvForward(g, y, x, w, b, ws)
					o.ConvBackwardFilter(g, dw, dbias, dy, x, ws)
				} else {
					o.ConvForwardKeep(g, y, x, w, b, ws, cols)
					o.Fill(ws, float32(math.NaN())) // its size sets the chunks; its contents are not read
					o.Profile(true)
					o.ConvBackwardFilterCols(g, dw, dbias, dy, ws, cols)
					for _, kt := range o.Profile(false) {
						if strings.HasPrefix(kt.Name, "im2col") {
							t.Errorf("%+v: the filter gradient from kept columns launched %s", g, kt.Name)
						}
					}
				}
				out[k] = [3][]float32{download(o, y), download(o, dw), download(o, db)}
			}
			for i, what := range []string{"y", "dw", "db"} {
				if i == 2 && b == nil {
					continue
				}
				requireSameBits(t, fmt.Sprintf("%+v bias %v, %d samples per chunk: %s", g, b != nil, min(g.N, ws.Len()/per), what), out[1][i], out[0][i])
			}
		}
	}
	// Past the budget there is no room.
	g := clColGeoms[0]
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	need := int64(convKeepLen(g) * o.esize())
	for _, budget := range []int64{need - 1, need} {
		b := openCLKnobs(t, o, func(kn *knobs) { kn.keepBudget = budget })
		setWinograd(t, b, WinogradOff)
		held := b.keepBytes.Load() // 0 unless a dropped buffer of an earlier run is still counted
		c := b.ConvKeepColumns(g)
		switch {
		case budget < need && c != nil:
			t.Errorf("kept columns of %d elements past the budget", c.Len())
		case budget == need && held == 0 && c == nil:
			t.Error("no kept columns with exactly enough budget")
		}
	}
}

package sgemm

import "unsafe"

// kernelFunc is a micro-kernel: it computes one register tile of C.
//
//	a: packed micro-panel of op(A), k steps of MR floats (row i of step p at p·MR+i)
//	b: packed micro-panel of op(B), k steps of NR floats (column j of step p at p·NR+j)
//	c: the tile's top-left element, rows ldc floats apart
//
// A kernel of rows×vecs writes rows×(vecs·VL) elements of C:
//
//	c[i·ldc+j] = alpha·acc[i][j] + beta·c[i·ldc+j],  acc[i][j] = Σ_p a[p·MR+i]·b[p·NR+j]
//
// accumulating acc in increasing p with one fused multiply-add per step and
// starting from zero, then scaling by alpha, then adding beta·c with one more
// fused multiply-add. When beta is ±0, C is not read (it may hold NaN). The
// arithmetic of an element depends neither on its place in the tile nor on
// the variant, so edge tiles and full tiles give the same bits.
type kernelFunc func(k int, a, b, c *float32, ldc int, alpha, beta float32)

// arch is one micro-kernel family with its blocking.
type arch struct {
	name string
	mr   int // rows of a register tile (A's packed stride)
	nr   int // columns of a register tile (B's packed stride)
	vl   int // floats per vector; kernels exist for 1..nr/vl vectors
	mc   int // rows of op(A) packed at once (a multiple of mr)
	nc   int // columns of op(B) packed at once (a multiple of nr)
	kern [][]kernelFunc
}

// kc is the depth of one packed block, the same for every family: the sum
// over k is cut into blocks of kc in increasing order and every block's
// product is added into C (C = alpha·acc + C after the first), so the cut
// points must not depend on anything but k for results to be reproducible.
const kc = 256

// maxTile bounds mr·nr over all families: the edge tile buffer's size.
const maxTile = 8 * 64

// goArch is the pure-Go family, used when no assembly applies (other
// architectures, the purego build tag). Its full 4×4 tile keeps the sixteen
// sums in locals; edges go through goKernel.
var goArch = &arch{name: "go", mr: 4, nr: 4, vl: 4, mc: 128, nc: 512, kern: [][]kernelFunc{
	{goKernelFunc(1, 4, 4, 4)}, {goKernelFunc(2, 4, 4, 4)}, {goKernelFunc(3, 4, 4, 4)}, {goKernel4x4},
}}

// goKernelFunc wraps goKernel as a kernelFunc for rows×cols of an mr×nr family.
func goKernelFunc(rows, cols, mr, nr int) kernelFunc {
	return func(k int, a, b, c *float32, ldc int, alpha, beta float32) {
		goKernel(rows, cols, mr, nr, k, unsafe.Slice(a, k*mr), unsafe.Slice(b, k*nr),
			unsafe.Slice(c, (rows-1)*ldc+cols), ldc, alpha, beta, false)
	}
}

// goKernel is the pure-Go twin of every micro-kernel: the kernelFunc contract
// for rows×cols of a tile whose packed strides are mr and nr. With fused set
// it rounds like a fused multiply-add (the product and sum in float64, which
// holds the float32 product exactly, then rounded once to float32: the tests'
// reference for the assembly kernels). Without it, every product is rounded
// to float32 before its sum (explicit conversions, which Go never fuses; it
// would otherwise fuse x*y + z on arm64 and on amd64 with GOAMD64=v3), so the
// pure-Go family gives the same bits on every target.
func goKernel(rows, cols, mr, nr, k int, a, b, c []float32, ldc int, alpha, beta float32, fused bool) {
	var acc [maxTile]float32
	for p := 0; p < k; p++ {
		ap, bp := a[p*mr:p*mr+rows], b[p*nr:p*nr+cols]
		for i, av := range ap {
			row := acc[i*cols : (i+1)*cols]
			if fused {
				for j, bv := range bp {
					row[j] = float32(float64(float64(av)*float64(bv)) + float64(row[j])) // the product is exact
				}
				continue
			}
			for j, bv := range bp {
				row[j] += float32(av * bv)
			}
		}
	}
	for i := 0; i < rows; i++ {
		out, row := c[i*ldc:i*ldc+cols], acc[i*cols:(i+1)*cols]
		for j, v := range row {
			v = float32(v * alpha) // rounded before the sum below: never fused
			switch {
			case beta == 0:
				out[j] = v
			case fused:
				out[j] = float32(float64(float64(beta)*float64(out[j])) + float64(v))
			default:
				out[j] = float32(beta*out[j]) + v
			}
		}
	}
}

// goKernel4x4 is the pure-Go family's full tile.
func goKernel4x4(k int, ap, bp, cp *float32, ldc int, alpha, beta float32) {
	a, b := unsafe.Slice(ap, 4*k), unsafe.Slice(bp, 4*k)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p+3 < len(a) && p+3 < len(b); p += 4 {
		a0, a1, a2, a3 := a[p], a[p+1], a[p+2], a[p+3]
		b0, b1, b2, b3 := b[p], b[p+1], b[p+2], b[p+3]
		c00 += float32(a0 * b0)
		c01 += float32(a0 * b1)
		c02 += float32(a0 * b2)
		c03 += float32(a0 * b3)
		c10 += float32(a1 * b0)
		c11 += float32(a1 * b1)
		c12 += float32(a1 * b2)
		c13 += float32(a1 * b3)
		c20 += float32(a2 * b0)
		c21 += float32(a2 * b1)
		c22 += float32(a2 * b2)
		c23 += float32(a2 * b3)
		c30 += float32(a3 * b0)
		c31 += float32(a3 * b1)
		c32 += float32(a3 * b2)
		c33 += float32(a3 * b3)
	}
	c := unsafe.Slice(cp, 3*ldc+4)
	acc := [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
	for i := 0; i < 4; i++ {
		out := c[i*ldc : i*ldc+4]
		for j := range out {
			v := float32(acc[i*4+j] * alpha)
			if beta == 0 {
				out[j] = v
			} else {
				out[j] = float32(beta*out[j]) + v
			}
		}
	}
}

// archs lists the families this machine can run, fastest first; the pure-Go
// one is always last.
var archs = append(asmArchs(), goArch)

// Kernel names the micro-kernel family Gemm uses: "avx512", "avx2", "neon"
// or "go" (the first of archs; a Thread's tests may pick another, fam).
func Kernel() string { return archs[0].name }

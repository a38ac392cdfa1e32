package gpu

import (
	"fmt"
	"strings"
	"testing"
)

// permGeom is the copy of a contiguous tensor of dims into the contiguous
// transpose by perm (out axis k is in axis perm[k]).
func permGeom(dims, perm []int) StridedGeom {
	in := ContiguousStrides(dims)
	out := make([]int, len(dims))
	src := make([]int, len(dims))
	for k, p := range perm {
		out[k], src[k] = dims[p], in[p]
	}
	return StridedGeom{Dims: out, Dst: ContiguousStrides(out), Src: src}
}

// TestCanon checks the merging of contiguous axes and the panics on our own
// bugs (too many axes, a view outside its buffer).
func TestCanon(t *testing.T) {
	g := canon("t", []int{2, 3, 4, 5}, ContiguousStrides([]int{2, 3, 4, 5}))
	if g.Dims != [MaxRank]int{1, 1, 1, 1, 1, 120} || g.Strides[0][MaxRank-1] != 1 {
		t.Fatalf("a contiguous copy merges to %v %v, want one axis of 120", g.Dims, g.Strides[0])
	}
	sh := permGeom([]int{2, 4, 3, 5, 6}, []int{0, 2, 1, 3, 4}) // channel shuffle: H and W merge
	g = canon("t", sh.Dims, sh.Dst, sh.Src)
	if g.Dims != [MaxRank]int{1, 1, 2, 3, 4, 30} {
		t.Fatalf("channel shuffle merges to %v", g.Dims)
	}
	panics := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("%s: panic %v, want one containing %q", name, r, want)
			}
		}()
		f()
	}
	rev := permGeom([]int{2, 2, 2, 2, 2, 2, 2}, []int{6, 5, 4, 3, 2, 1, 0})
	panics("7 axes", "at most 6", func() { rev.Canon("CopyStrided", 128, 128) })
	panics("outside", "reaches element", func() {
		StridedGeom{Dims: []int{10}, Dst: []int{1}, Src: []int{1}, SrcOff: 1}.Canon("CopyStrided", 10, 10)
	})
	panics("reduce mismatch", "not in", func() {
		ReduceGeom{In: []int{3, 4}, Out: []int{2, 2}}.Canon("ReduceSum", 4, 12)
	})
}

// ParseBinOp reads back what String writes (graph descriptions and ONNX
// store the operation by name) and refuses anything else.
func TestParseBinOp(t *testing.T) {
	for _, o := range []BinOp{BinAdd, BinSub, BinMul, BinDiv, BinMax, BinMin, BinPow} {
		if got, ok := ParseBinOp(o.String()); !ok || got != o {
			t.Errorf("ParseBinOp(%q) = %v, %v; want %v", o.String(), got, ok, o)
		}
	}
	for _, bad := range []string{"", "add", "Mod", "binop(8)"} {
		if got, ok := ParseBinOp(bad); ok {
			t.Errorf("ParseBinOp(%q) = %v, want none", bad, got)
		}
	}
}

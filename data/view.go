package data

import (
	"fmt"
	"strconv"
	"strings"
)

// view is a Dataset made of some samples of a base data set, in a given
// order, with labels optionally remapped. It holds indices only, never
// pixels, so views are cheap to stack.
type view struct {
	base    Dataset
	idx     []int   // idx[i] is the base index of sample i
	relabel []int32 // when not nil, the label of sample i is relabel[base label]
	classes int
}

var (
	_ Dataset = (*view)(nil)
	_ Labeler = (*view)(nil)
)

func (v *view) Len() int             { return len(v.idx) }
func (v *view) Shape() (c, h, w int) { return v.base.Shape() }
func (v *view) Classes() int         { return v.classes }

func (v *view) Get(i int, dst []float32) int32 {
	l := v.base.Get(v.idx[i], dst)
	if v.relabel != nil {
		l = v.relabel[l]
	}
	return l
}

func (v *view) Label(i int) int32 {
	l := labelOf(v.base, v.idx[i])
	if v.relabel != nil {
		l = v.relabel[l]
	}
	return l
}

// labelOf returns the label of ds's sample i, decoding it into a scratch
// buffer when ds is not a Labeler.
func labelOf(ds Dataset, i int) int32 {
	if l, ok := ds.(Labeler); ok {
		return l.Label(i)
	}
	c, h, w := ds.Shape()
	return ds.Get(i, make([]float32, c*h*w))
}

// Subset returns the samples of ds at the given indices, in that order
// (repeats allowed). It copies idx. An index outside [0, ds.Len()) is the
// caller's bug and panics here rather than at a later Get.
func Subset(ds Dataset, idx []int) Dataset {
	n := ds.Len()
	for _, j := range idx {
		if j < 0 || j >= n {
			panic(fmt.Sprintf("data: Subset: index %d out of range [0,%d)", j, n))
		}
	}
	return &view{base: ds, idx: append([]int(nil), idx...), classes: ds.Classes()}
}

// FilterClasses returns the samples of ds whose label is one of classes, in
// ds's order. With relabel, the label classes[k] becomes k and the view has
// len(classes) classes (digits 5..9 become 0..4); without, labels and
// Classes() stay those of ds. Labels are read once here (through Labeler
// when ds has it). Each class must lie in [0, ds.Classes()) and appear once;
// anything else is the caller's bug and panics, so validate user input first.
func FilterClasses(ds Dataset, classes []int, relabel bool) Dataset {
	k := ds.Classes()
	lut := make([]int32, k)
	for i := range lut {
		lut[i] = -1
	}
	for j, c := range classes {
		if c < 0 || c >= k {
			panic(fmt.Sprintf("data: FilterClasses: class %d out of range [0,%d)", c, k))
		}
		if lut[c] >= 0 {
			panic(fmt.Sprintf("data: FilterClasses: class %d given twice", c))
		}
		lut[c] = int32(j)
	}
	var idx []int
	for i := range ds.Len() {
		if lut[labelOf(ds, i)] >= 0 {
			idx = append(idx, i)
		}
	}
	v := &view{base: ds, idx: idx, classes: k}
	if relabel {
		v.relabel, v.classes = lut, len(classes)
	}
	return v
}

// Shard returns shard i of n (0 <= i < n) of ds by interleaving: shard i
// holds samples i, i+n, i+2n, ... The n shards are disjoint and together
// cover every sample exactly once; their sizes differ by at most one.
// Interleaving, rather than contiguous blocks, gives every shard a share of
// each class even when ds is sorted by class, as LoadImageFolder's is.
// It is an error for n < 1, i outside [0, n), or n > ds.Len() (an empty
// shard).
func Shard(ds Dataset, i, n int) (Dataset, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, errorf(ErrInvalid, "data: shard %d/%d: want 0 <= i < n", i, n)
	}
	if n > ds.Len() {
		return nil, errorf(ErrInvalid, "data: shard %d/%d: %d samples cannot fill %d shards", i, n, ds.Len(), n)
	}
	idx := make([]int, 0, (ds.Len()-i+n-1)/n)
	for j := i; j < ds.Len(); j += n {
		idx = append(idx, j)
	}
	return &view{base: ds, idx: idx, classes: ds.Classes()}, nil
}

// ParseShard parses "i/n", shard i of n with shards numbered from 0: "0/3",
// "1/3" and "2/3" are the three shards of three. It is an error for either
// number to be malformed, for n < 1, or for i outside 0..n-1 (so "3/3" is
// refused with a reminder that shards count from 0).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, errorf(ErrInvalid, "data: shard %q: want i/n, such as 0/3", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return 0, 0, errorf(ErrInvalid, "data: shard %q: want two integers i/n, such as 0/3", s)
	}
	if n < 1 {
		return 0, 0, errorf(ErrInvalid, "data: shard %q: n = %d, want at least 1", s, n)
	}
	if i < 0 || i >= n {
		return 0, 0, errorf(ErrInvalid, "data: shard %q: i = %d, want 0..%d (shards are numbered from 0)", s, i, n-1)
	}
	return i, n, nil
}

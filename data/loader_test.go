package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// drain runs l for whole epochs with the given batch sizes (cycled) and
// returns the sample indices delivered in each epoch, checking labels and
// the epochDone/Epoch/Pos bookkeeping on the way.
func drain(t *testing.T, l *Loader, ds Dataset, epochs int, batches []int) [][]int {
	t.Helper()
	c, h, w := ds.Shape()
	size := c * h * w
	maxB := slices.Max(batches)
	x := make([]float32, maxB*size)
	labels := make([]int32, maxB)
	var out [][]int
	cur := []int{}
	for call := 0; len(out) < epochs; call++ {
		b := batches[call%len(batches)]
		l.SetBatch(b)
		epoch, pos := l.Epoch(), l.Pos()
		n, done := l.Next(x, labels)
		if want := min(b, ds.Len()-pos); n != want {
			t.Fatalf("call %d: n = %d, want %d", call, n, want)
		}
		for k := range n {
			j := sampleIndex(x[k*size:])
			if labels[k] != int32(j%ds.Classes()) {
				t.Fatalf("sample %d delivered with label %d", j, labels[k])
			}
			cur = append(cur, j)
		}
		if done != (pos+n == ds.Len()) {
			t.Fatalf("call %d: epochDone = %v at pos %d+%d of %d", call, done, pos, n, ds.Len())
		}
		if done {
			if l.Epoch() != epoch+1 || l.Pos() != 0 {
				t.Fatalf("after epoch end: Epoch %d Pos %d, want %d 0", l.Epoch(), l.Pos(), epoch+1)
			}
			out = append(out, cur)
			cur = []int{}
		} else if l.Epoch() != epoch || l.Pos() != pos+n {
			t.Fatalf("Epoch %d Pos %d, want %d %d", l.Epoch(), l.Pos(), epoch, pos+n)
		}
	}
	return out
}

func isPermutation(p []int) bool {
	s := slices.Clone(p)
	slices.Sort(s)
	for i, v := range s {
		if v != i {
			return false
		}
	}
	return true
}

func TestLoaderSeededOrder(t *testing.T) {
	ds := seqImages(t, 103, 1, 2, 3, 5)
	a := drain(t, NewLoader(ds, 10, 42, true), ds, 3, []int{10})
	// Same seed, different batch sizes (changing every call): same order.
	b := drain(t, NewLoader(ds, 1, 42, true), ds, 3, []int{7, 1, 32, 64, 5})
	other := drain(t, NewLoader(ds, 10, 43, true), ds, 1, []int{10})
	for e := range a {
		if !isPermutation(a[e]) {
			t.Fatalf("epoch %d is not a permutation: %v", e, a[e])
		}
		if !slices.Equal(a[e], b[e]) {
			t.Errorf("epoch %d: order depends on the batch sizes", e)
		}
	}
	if slices.Equal(a[0], a[1]) || slices.Equal(a[1], a[2]) {
		t.Error("consecutive epochs have the same order")
	}
	if slices.Equal(a[0], other[0]) {
		t.Error("seeds 42 and 43 give the same order")
	}
	// Epoch 2 on its own, via Seek, without replaying epochs 0 and 1.
	l := NewLoader(ds, 10, 42, true)
	l.Seek(2, 0)
	if got := drain(t, l, ds, 1, []int{10}); !slices.Equal(got[0], a[2]) {
		t.Error("Seek(2, 0) does not reproduce epoch 2")
	}
	// Mid-epoch resume.
	l.Seek(1, 37)
	x, labels := make([]float32, 6*10), make([]int32, 10)
	l.Next(x, labels)
	if got := sampleIndex(x); got != a[1][37] {
		t.Errorf("Seek(1, 37) delivers sample %d, want %d", got, a[1][37])
	}
}

func TestLoaderWithoutShuffle(t *testing.T) {
	ds := seqImages(t, 11, 1, 1, 2, 3)
	got := drain(t, NewLoader(ds, 4, 1, false), ds, 2, []int{4})
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for e := range got {
		if !slices.Equal(got[e], want) {
			t.Errorf("epoch %d = %v, want identity", e, got[e])
		}
	}
}

// The permutation is a fixed function of (seed, epoch, len). These values
// pin it (recorded from this implementation): a change here breaks reproducibility of saved runs and of workers
// built from different versions, so it must be deliberate.
func TestLoaderOrderIsPinned(t *testing.T) {
	ds := seqImages(t, 10, 1, 1, 2, 1)
	got := drain(t, NewLoader(ds, 10, 7, true), ds, 2, []int{10})
	// Recompute from the documented recipe with math/rand/v2's PCG.
	for e := range got {
		pcg := rand.NewPCG(7, splitmix64(uint64(e)))
		want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		for i := len(want) - 1; i > 0; i-- {
			j := uint64n(pcg, uint64(i+1))
			want[i], want[j] = want[j], want[i]
		}
		if !slices.Equal(got[e], want) {
			t.Errorf("epoch %d = %v, want %v", e, got[e], want)
		}
	}
	if fmt.Sprint(got[0]) != "[6 0 9 3 8 1 2 5 4 7]" {
		t.Errorf("epoch 0 of seed 7 = %v; the pinned order changed", got[0])
	}
}

func TestUint64nUniform(t *testing.T) {
	pcg := rand.NewPCG(1, 2)
	const n, draws = 6, 60000
	var counts [n]int
	for range draws {
		counts[uint64n(pcg, n)]++
	}
	for v, c := range counts {
		// Expected 10000, standard deviation about 91: allow 5 sigma.
		if c < 9545 || c > 10455 {
			t.Errorf("value %d drawn %d times of %d, want about %d", v, c, draws, draws/n)
		}
	}
}

func TestLoaderNextAllocatesNothing(t *testing.T) {
	ds := seqImages(t, 50, 1, 4, 4, 3)
	l := NewLoader(ds, 8, 3, true)
	x, labels := make([]float32, 16*16), make([]int32, 16)
	sizes := []int{8, 16, 3}
	call := 0
	allocs := testing.AllocsPerRun(200, func() { // crosses many epoch boundaries
		l.SetBatch(sizes[call%3])
		call++
		l.Next(x, labels)
	})
	if allocs != 0 {
		t.Errorf("Next allocates %v times per call, want 0", allocs)
	}
}

func TestLoaderPanicsOnCallerBugs(t *testing.T) {
	ds := seqImages(t, 5, 1, 1, 2, 1)
	tests := []struct {
		name string
		f    func()
	}{
		{"short x", func() { NewLoader(ds, 4, 0, true).Next(make([]float32, 7), make([]int32, 4)) }},
		{"short labels", func() { NewLoader(ds, 4, 0, true).Next(make([]float32, 8), make([]int32, 3)) }},
		{"zero batch", func() { NewLoader(ds, 0, 0, true) }},
		{"seek past end", func() { NewLoader(ds, 1, 0, true).Seek(0, 5) }},
		{"empty", func() { NewLoader(Subset(ds, nil), 1, 0, true) }},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tt.name)
				}
			}()
			tt.f()
		}()
	}
}

// BenchmarkLoaderNext measures one batch of 64 from an MNIST-sized data set
// (60,000 images of 1×28×28 bytes), shuffled.
func BenchmarkLoaderNext(b *testing.B) {
	const n, size, batch = 60000, 28 * 28, 64
	pix := make([]uint8, n*size)
	labels := make([]int32, n)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range pix {
		pix[i] = uint8(r.Uint32())
	}
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	ds, err := NewImages(pix, labels, 1, 28, 28, 10, []float32{MNISTMean}, []float32{MNISTStd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	l := NewLoader(ds, batch, 1, true)
	x, lab := make([]float32, batch*size), make([]int32, batch)
	b.SetBytes(batch * size * 4)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l.Next(x, lab)
	}
}

// TestLoaderNextIDs: NextIDs delivers Next's batches, with each sample's
// index in the data set as its identity, across an epoch's end and its
// short last batch.
func TestLoaderNextIDs(t *testing.T) {
	ds := seqImages(t, 23, 1, 2, 3, 5)
	a, b := NewLoader(ds, 5, 9, true), NewLoader(ds, 5, 9, true)
	x, y := make([]float32, 5*6), make([]float32, 5*6)
	la, lb := make([]int32, 5), make([]int32, 5)
	ids := make([]int64, 5)
	for call := range 12 {
		n, done := a.NextIDs(x, la, ids)
		m, done2 := b.Next(y, lb)
		if n != m || done != done2 || !slices.Equal(x[:n*6], y[:n*6]) || !slices.Equal(la[:n], lb[:n]) {
			t.Fatalf("call %d: NextIDs gave %d samples (epoch done %v), Next %d (%v), or other values", call, n, done, m, done2)
		}
		for k := range n {
			if got := sampleIndex(x[k*6 : (k+1)*6]); int64(got) != ids[k] {
				t.Fatalf("call %d: sample %d is data set sample %d, identity %d", call, k, got, ids[k])
			}
		}
	}
}

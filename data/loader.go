package data

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Loader walks a Dataset in mini-batches, epoch after epoch, in a seeded
// order.
//
// Order: epoch k visits the samples in a permutation that depends only on
// (seed, k, ds.Len()): a PCG generator (math/rand/v2) seeded with
// (seed, splitmix64(k)) drives a Fisher-Yates shuffle whose bounded draws
// are computed here (Lemire's method on PCG.Uint64), so the order does not
// depend on how rand.Rand's helpers are implemented and epoch k can be
// reproduced without replaying epochs 0..k-1 (see Seek). Without shuffle
// every epoch is 0, 1, ..., Len()-1.
//
// Batches: each Next fills up to Batch() samples. A batch never spans two
// epochs: the last batch of an epoch holds what is left (possibly fewer than
// Batch() samples) and reports epochDone. The batch size may change between
// any two calls (SetBatch), as the hub resizes a worker's share.
//
// A Loader is not safe for concurrent use; Next allocates nothing.
type Loader struct {
	ds      Dataset
	sample  int // c*h*w floats per sample
	batch   int
	seed    uint64
	shuffle bool
	epoch   int
	pos     int   // next position in perm
	perm    []int // order of the current epoch
	pcg     *rand.PCG
}

// NewLoader returns a Loader over ds at epoch 0, position 0. ds must be non
// empty and batch at least 1; the Loader's consumers size their buffers as
// Batch()*c*h*w floats and Batch() labels.
func NewLoader(ds Dataset, batch int, seed uint64, shuffle bool) *Loader {
	if ds.Len() < 1 {
		panic("data: NewLoader: empty data set")
	}
	c, h, w := ds.Shape()
	l := &Loader{ds: ds, sample: c * h * w, seed: seed, shuffle: shuffle,
		perm: make([]int, ds.Len()), pcg: rand.NewPCG(0, 0)}
	l.SetBatch(batch)
	l.Seek(0, 0)
	return l
}

// SetBatch sets the number of samples later Next calls fill (at least 1).
func (l *Loader) SetBatch(batch int) {
	if batch < 1 {
		panic(fmt.Sprintf("data: Loader.SetBatch(%d): want at least 1", batch))
	}
	l.batch = batch
}

// Batch returns the current batch size.
func (l *Loader) Batch() int { return l.batch }

// Epoch returns the epoch the next sample comes from, counting from 0.
func (l *Loader) Epoch() int { return l.epoch }

// Pos returns how many samples of the current epoch have been delivered.
func (l *Loader) Pos() int { return l.pos }

// Len returns the number of samples per epoch.
func (l *Loader) Len() int { return len(l.perm) }

// Seek moves to position pos (0 <= pos < Len()) of epoch (>= 0), so that a
// worker joining at any point, or restarting, continues the same sequence.
func (l *Loader) Seek(epoch, pos int) {
	if epoch < 0 || pos < 0 || pos >= len(l.perm) {
		panic(fmt.Sprintf("data: Loader.Seek(%d, %d): want epoch >= 0 and 0 <= pos < %d", epoch, pos, len(l.perm)))
	}
	l.epoch, l.pos = epoch, pos
	for i := range l.perm {
		l.perm[i] = i
	}
	if !l.shuffle {
		return
	}
	l.pcg.Seed(l.seed, splitmix64(uint64(epoch)))
	for i := len(l.perm) - 1; i > 0; i-- {
		j := uint64n(l.pcg, uint64(i+1))
		l.perm[i], l.perm[j] = l.perm[j], l.perm[i]
	}
}

// Next writes the next n = min(Batch(), Len()-Pos()) samples of the current
// epoch into x[:n*c*h*w] (NCHW) and their labels into labels[:n], and
// returns n. epochDone is true when this batch finished the epoch; the
// Loader has then moved to position 0 of the next epoch. len(x) must be at
// least Batch()*c*h*w and len(labels) at least Batch(); shorter buffers are
// the caller's bug and panic.
func (l *Loader) Next(x []float32, labels []int32) (n int, epochDone bool) {
	if len(x) < l.batch*l.sample || len(labels) < l.batch {
		panic(fmt.Sprintf("data: Loader.Next: buffers hold %d floats and %d labels, batch %d needs %d and %d",
			len(x), len(labels), l.batch, l.batch*l.sample, l.batch))
	}
	n = min(l.batch, len(l.perm)-l.pos)
	for k := range n {
		labels[k] = l.ds.Get(l.perm[l.pos+k], x[k*l.sample:(k+1)*l.sample])
	}
	l.pos += n
	if l.pos == len(l.perm) {
		l.Seek(l.epoch+1, 0)
		return n, true
	}
	return n, false
}

// NextIDs is Next that also writes each sample's index in the data set
// into ids[:n]: the identity under which solver's prefix cache keeps the
// sample's features (solver.Trainer.StepIDs), valid because a Dataset's Get
// gives the same values for the same index every time. len(ids) must be
// at least Batch().
func (l *Loader) NextIDs(x []float32, labels []int32, ids []int64) (n int, epochDone bool) {
	if len(ids) < l.batch {
		panic(fmt.Sprintf("data: Loader.NextIDs: %d identities for a batch of %d", len(ids), l.batch))
	}
	for k := range min(l.batch, len(l.perm)-l.pos) {
		ids[k] = int64(l.perm[l.pos+k])
	}
	return l.Next(x, labels)
}

// uint64n returns a uniform value in [0, n) from src by Lemire's
// multiply-and-reject method ("Fast Random Integer Generation in an
// Interval", 2019). It is spelled out so that permutations stay the same
// whatever math/rand/v2 does inside rand.Rand.
func uint64n(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// splitmix64 scrambles x (Steele, Lea and Flood's SplitMix64 finaliser), so
// that consecutive epoch numbers seed unrelated PCG streams.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

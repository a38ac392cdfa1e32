package sim

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// checker holds what the invariants are checked against, independently of
// the hub core's own bookkeeping:
//
//  1. the merged gradient of an iteration equals Σ bᵢgᵢ / Σ bᵢ over the
//     pushes the hub accepted for it, recomputed here in float64 in the
//     order they arrived (so up to rounding: relative 1e-6 per element);
//  2. every worker whose state reaches iteration k holds, bit for bit, the
//     weights the hub had after step k.
type checker struct {
	acc     []float64 // Σ bᵢgᵢ of the open iteration's accepted pushes
	samples int
	pushes  int
	snaps   map[uint64][]float32 // hub weights after k steps
	scratch []float32
}

// keep is how many snapshots of the hub's weights are kept: a worker
// applies Merged k before the hub can close k+1 unless it is idle, and an
// idle worker is at most a few Merged behind on the network.
const keep = 16

func newChecker(params int) checker {
	return checker{acc: make([]float64, params), snaps: map[uint64][]float32{},
		scratch: make([]float32, params)}
}

// pushed adds a push the hub accepted.
func (c *checker) pushed(m *wire.Push) {
	w := float64(m.Samples)
	for i, g := range m.Gradient {
		c.acc[i] += w * float64(g)
	}
	c.samples += m.Samples
	c.pushes++
}

// reset forgets the pushes (the iteration closed or reopened).
func (c *checker) reset() {
	clear(c.acc)
	c.samples, c.pushes = 0, 0
}

// merged checks a Merged against the pushes.
func (c *checker) merged(m *wire.Merged) error {
	if c.samples == 0 {
		return fmt.Errorf("%w: Merged %d with no push accepted", ErrInvariant, m.Iteration)
	}
	if len(m.Gradient) != len(c.acc) {
		return fmt.Errorf("%w: Merged %d has %d values, the model %d", ErrInvariant, m.Iteration, len(m.Gradient), len(c.acc))
	}
	n := float64(c.samples)
	for i, got := range m.Gradient {
		want := c.acc[i] / n
		if d := math.Abs(float64(got) - want); d > 1e-6*(math.Abs(want)+1e-6) && d > 1e-12 {
			return fmt.Errorf("%w: Merged %d element %d is %v, the sample-weighted mean of %d pushes (%d samples) is %v",
				ErrInvariant, m.Iteration, i, got, c.pushes, c.samples, want)
		}
	}
	return nil
}

// snapshot keeps the hub's weights after k steps.
func (c *checker) snapshot(k uint64, net *solver.Net) {
	c.snaps[k] = state.Params(net)
	delete(c.snaps, k-keep)
}

// weights checks a worker's weights at iteration k against the hub's.
func (c *checker) weights(who string, k uint64, net *solver.Net) error {
	want, ok := c.snaps[k]
	if !ok {
		if k == 0 {
			return nil // the initial state: a Welcome before any step
		}
		return fmt.Errorf("%w: %s reached iteration %d, which the hub's last %d steps do not include", ErrInvariant, who, k, keep)
	}
	net.B.Download(c.scratch, net.Params)
	for i, v := range c.scratch {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			return fmt.Errorf("%w: %s at iteration %d: weight %d is %v, the hub's is %v", ErrInvariant, who, k, i, v, want[i])
		}
	}
	return nil
}

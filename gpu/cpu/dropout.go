package cpu

import "github.com/cotrain/cotrain/gpu"

// DropoutMask implements Backend, split over ranges of Philox blocks.
func (c *CPU) DropoutMask(mask gpu.Buffer, seed uint64, p float32) {
	m := h(mask)
	j := &c.job
	j.op, j.y, j.seed = opDropoutMask, m, seed
	j.thr, j.keep = gpu.DropoutParams(p)
	blocks := (len(m) + 3) / 4
	// About 10 times an elementwise kernel's work per element: the part
	// size says when a helper thread pays.
	c.run(j, blocks, 10*len(m))
}

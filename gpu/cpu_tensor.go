package gpu

// The structural kernels on the CPU (tensor.go describes them). Each walks
// its merged index space row-major: the five outer axes by an odometer, the
// innermost axis in a tight loop.

// rows is the number of rows (runs of the innermost axis) of g.
func (g *canonGeom) rows() int {
	if g.total == 0 {
		return 0
	}
	return g.total / g.dims[MaxRank-1]
}

// walkRows calls f(base offsets of the operands) for rows [lo, hi) of g's
// index space, in row-major order.
func (g *canonGeom) walkRows(ops, lo, hi int, f func(off [3]int)) {
	if lo >= hi {
		return
	}
	var idx [MaxRank - 1]int
	var off [3]int
	r := lo
	for k := MaxRank - 2; k >= 0; k-- {
		idx[k] = r % g.dims[k]
		r /= g.dims[k]
		for j := range ops {
			off[j] += idx[k] * g.strides[j][k]
		}
	}
	for row := lo; ; {
		f(off)
		if row++; row == hi {
			return
		}
		for k := MaxRank - 2; k >= 0; k-- {
			idx[k]++
			for j := range ops {
				off[j] += g.strides[j][k]
			}
			if idx[k] < g.dims[k] {
				break
			}
			for j := range ops {
				off[j] -= idx[k] * g.strides[j][k]
			}
			idx[k] = 0
		}
	}
}

// tensorJob holds the operands of a structural kernel for the thread pool
// (cpu_par.go): its rows are cut into parts, each part writes its own rows'
// outputs, so the bits do not depend on the thread count.
type tensorJob struct {
	g, red     canonGeom // the index space (ReduceSum: the kept axes) and the reduced axes
	d, s, a, b []float32
	doff, soff int
	add        bool
	op         BinOp
	alpha      float32
}

// run runs rows [lo, hi) of the kernel op.
func (t *tensorJob) run(op cpuOp, lo, hi int) {
	switch op {
	case opStrided:
		t.strided(lo, hi)
	case opBroadcast:
		t.broadcast(lo, hi)
	case opReduce:
		t.reduce(lo, hi)
	}
}

// CopyStrided implements Backend.
func (c *CPU) CopyStrided(dst, src Buffer, g StridedGeom, add bool) {
	d, s := h(dst), h(src)
	j := &c.job
	j.op, j.ten = opStrided, tensorJob{g: canonStrided("CopyStrided", g, len(d), len(s)), d: d, s: s,
		doff: g.DstOff, soff: g.SrcOff, add: add}
	c.run(j, j.ten.g.rows(), j.ten.g.total)
}

func (t *tensorJob) strided(lo, hi int) {
	d, s, c := t.d, t.s, &t.g
	n, ds, ss := c.dims[MaxRank-1], c.strides[0][MaxRank-1], c.strides[1][MaxRank-1]
	c.walkRows(2, lo, hi, func(off [3]int) {
		do, so := t.doff+off[0], t.soff+off[1]
		switch {
		case !t.add && ds == 1 && ss == 1:
			copy(d[do:do+n], s[so:so+n])
		case !t.add:
			for i := range n {
				d[do+i*ds] = s[so+i*ss]
			}
		default:
			for i := range n {
				d[do+i*ds] += s[so+i*ss]
			}
		}
	})
}

// Broadcast implements Backend.
func (c *CPU) Broadcast(op BinOp, dst, a, b Buffer, g BroadcastGeom) {
	d, as, bs := h(dst), h(a), h(b)
	if op < BinAdd || op > BinDiv {
		panic("gpu: Broadcast: unknown operation " + op.String())
	}
	j := &c.job
	j.op, j.ten = opBroadcast, tensorJob{g: canonBroadcast("Broadcast", g, len(d), len(as), len(bs)), d: d, a: as, b: bs, op: op}
	c.run(j, j.ten.g.rows(), 2*j.ten.g.total)
}

func (t *tensorJob) broadcast(lo, hi int) {
	d, as, bs, c := t.d, t.a, t.b, &t.g
	n, sa, sb := c.dims[MaxRank-1], c.strides[1][MaxRank-1], c.strides[2][MaxRank-1]
	c.walkRows(3, lo, hi, func(off [3]int) {
		row, ao, bo := d[off[0]:off[0]+n], off[1], off[2]
		switch t.op {
		case BinAdd:
			for i := range row {
				row[i] = as[ao+i*sa] + bs[bo+i*sb]
			}
		case BinSub:
			for i := range row {
				row[i] = as[ao+i*sa] - bs[bo+i*sb]
			}
		case BinMul:
			for i := range row {
				row[i] = as[ao+i*sa] * bs[bo+i*sb]
			}
		case BinDiv:
			for i := range row {
				row[i] = as[ao+i*sa] / bs[bo+i*sb]
			}
		}
	})
}

// ReduceSum implements Backend: each destination element is alpha times the
// float32 sum of its source elements, added in row-major order of the
// reduced axes.
func (c *CPU) ReduceSum(dst, src Buffer, g ReduceGeom, alpha float32) {
	d, s := h(dst), h(src)
	r := canonReduce("ReduceSum", g, len(d), len(s))
	if r.out == 0 {
		return
	}
	j := &c.job
	j.op, j.ten = opReduce, tensorJob{g: r.keep, red: r.red, d: d, s: s, alpha: alpha}
	c.run(j, r.keep.rows(), len(s))
}

func (t *tensorJob) reduce(lo, hi int) {
	d, s, alpha := t.d, t.s, t.alpha
	kn, ks, kd := t.g.dims[MaxRank-1], t.g.strides[0][MaxRank-1], t.g.strides[1][MaxRank-1]
	if t.red.total == 1 { // nothing to sum: a scaled copy
		t.g.walkRows(2, lo, hi, func(koff [3]int) {
			for i := range kn {
				d[koff[1]+i*kd] = alpha * s[koff[0]+i*ks]
			}
		})
		return
	}
	t.g.walkRows(2, lo, hi, func(koff [3]int) {
		for i := range kn {
			d[koff[1]+i*kd] = alpha * t.red.sum(s, koff[0]+i*ks)
		}
	})
}

// sum adds the elements of s at base + the offsets of g's index space
// (operand 0), in row-major order, in float32. It is walk without a
// closure, so that the accumulator stays in a register.
func (g *canonGeom) sum(s []float32, base int) float32 {
	var acc float32
	if g.total == 0 {
		return 0
	}
	n, st := g.dims[MaxRank-1], g.strides[0][MaxRank-1]
	var idx [MaxRank - 1]int
	off := base
	for {
		row := s[off : off+(n-1)*st+1]
		if st == 1 || n == 1 {
			for _, v := range row {
				acc += v
			}
		} else {
			for j := 0; j < len(row); j += st {
				acc += row[j]
			}
		}
		k := MaxRank - 2
		for ; k >= 0; k-- {
			idx[k]++
			off += g.strides[0][k]
			if idx[k] < g.dims[k] {
				break
			}
			off -= idx[k] * g.strides[0][k]
			idx[k] = 0
		}
		if k < 0 {
			return acc
		}
	}
}

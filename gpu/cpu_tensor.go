package gpu

// The structural kernels on the CPU (tensor.go describes them). Each walks
// its merged index space row-major: the five outer axes by an odometer, the
// innermost axis in a tight loop.

// walk calls f(base offsets of the operands, innermost length) for every
// row of g's index space, in row-major order.
func (g *canonGeom) walk(ops int, f func(off [3]int)) {
	if g.total == 0 {
		return
	}
	var idx [MaxRank - 1]int
	var off [3]int
	for {
		f(off)
		k := MaxRank - 2
		for ; k >= 0; k-- {
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
		if k < 0 {
			return
		}
	}
}

// CopyStrided implements Backend.
func (*CPU) CopyStrided(dst, src Buffer, g StridedGeom, add bool) {
	d, s := h(dst), h(src)
	c := canonStrided("CopyStrided", g, len(d), len(s))
	n, ds, ss := c.dims[MaxRank-1], c.strides[0][MaxRank-1], c.strides[1][MaxRank-1]
	c.walk(2, func(off [3]int) {
		do, so := g.DstOff+off[0], g.SrcOff+off[1]
		switch {
		case !add && ds == 1 && ss == 1:
			copy(d[do:do+n], s[so:so+n])
		case !add:
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
func (*CPU) Broadcast(op BinOp, dst, a, b Buffer, g BroadcastGeom) {
	d, as, bs := h(dst), h(a), h(b)
	c := canonBroadcast("Broadcast", g, len(d), len(as), len(bs))
	n, sa, sb := c.dims[MaxRank-1], c.strides[1][MaxRank-1], c.strides[2][MaxRank-1]
	c.walk(3, func(off [3]int) {
		row, ao, bo := d[off[0]:off[0]+n], off[1], off[2]
		switch op {
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
		default:
			panic("gpu: Broadcast: unknown operation " + op.String())
		}
	})
}

// ReduceSum implements Backend: each destination element is alpha times the
// float32 sum of its source elements, added in row-major order of the
// reduced axes.
func (*CPU) ReduceSum(dst, src Buffer, g ReduceGeom, alpha float32) {
	d, s := h(dst), h(src)
	r := canonReduce("ReduceSum", g, len(d), len(s))
	if r.out == 0 {
		return
	}
	kn, ks, kd := r.keep.dims[MaxRank-1], r.keep.strides[0][MaxRank-1], r.keep.strides[1][MaxRank-1]
	if r.inner == 1 { // nothing to sum: a scaled copy
		r.keep.walk(2, func(koff [3]int) {
			for i := range kn {
				d[koff[1]+i*kd] = alpha * s[koff[0]+i*ks]
			}
		})
		return
	}
	r.keep.walk(2, func(koff [3]int) {
		for i := range kn {
			d[koff[1]+i*kd] = alpha * r.red.sum(s, koff[0]+i*ks)
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

package cpu

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// The structural kernels on the CPU (tensor.go describes them). Each walks
// its merged index space row-major: the five outer axes by an odometer, the
// innermost axis in a tight loop.

// rows is the number of rows (runs of the innermost axis) of g.
func (g *indexSpace) rows() int {
	if g.Total == 0 {
		return 0
	}
	return g.Total / g.Dims[gpu.MaxRank-1]
}

// walkRows calls f(base offsets of the operands) for rows [lo, hi) of g's
// index space, in row-major order.
func (g *indexSpace) walkRows(ops, lo, hi int, f func(off [3]int)) {
	if lo >= hi {
		return
	}
	var idx [gpu.MaxRank - 1]int
	var off [3]int
	r := lo
	for k := gpu.MaxRank - 2; k >= 0; k-- {
		idx[k] = r % g.Dims[k]
		r /= g.Dims[k]
		for j := range ops {
			off[j] += idx[k] * g.Strides[j][k]
		}
	}
	for row := lo; ; {
		f(off)
		if row++; row == hi {
			return
		}
		for k := gpu.MaxRank - 2; k >= 0; k-- {
			idx[k]++
			for j := range ops {
				off[j] += g.Strides[j][k]
			}
			if idx[k] < g.Dims[k] {
				break
			}
			for j := range ops {
				off[j] -= idx[k] * g.Strides[j][k]
			}
			idx[k] = 0
		}
	}
}

// tensorJob holds the operands of a structural kernel for the thread pool
// (par.go): its rows are cut into parts, each part writes its own rows'
// outputs, so the bits do not depend on the thread count.
type tensorJob struct {
	g, red     indexSpace // the index space (ReduceSum: the kept axes) and the reduced axes
	d, s, a, b []float32
	dy, y      []float32 // BroadcastPartial's output gradient and output
	wrt        int       // and the operand it differentiates by
	doff, soff int
	add        bool
	op         gpu.BinOp
	alpha      float32
}

// run runs rows [lo, hi) of the kernel op.
func (t *tensorJob) run(op cpuOp, lo, hi int) {
	switch op {
	case opStrided:
		t.strided(lo, hi)
	case opBroadcast:
		t.broadcast(lo, hi)
	case opPartial:
		t.partial(lo, hi)
	case opReduce:
		t.reduce(lo, hi)
	}
}

// CopyStrided implements Backend.
func (c *CPU) CopyStrided(dst, src gpu.Buffer, g gpu.StridedGeom, add bool) {
	d, s := h(dst), h(src)
	j := &c.job
	j.op, j.ten = opStrided, tensorJob{g: indexSpace{g.Canon("CopyStrided", len(d), len(s))}, d: d, s: s,
		doff: g.DstOff, soff: g.SrcOff, add: add}
	c.run(j, j.ten.g.rows(), j.ten.g.Total)
}

func (t *tensorJob) strided(lo, hi int) {
	d, s, c := t.d, t.s, &t.g
	n, ds, ss := c.Dims[gpu.MaxRank-1], c.Strides[0][gpu.MaxRank-1], c.Strides[1][gpu.MaxRank-1]
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
func (c *CPU) Broadcast(op gpu.BinOp, dst, a, b gpu.Buffer, g gpu.BroadcastGeom) {
	d, as, bs := h(dst), h(a), h(b)
	op.MustValid("Broadcast")
	j := &c.job
	j.op, j.ten = opBroadcast, tensorJob{g: indexSpace{g.Canon("Broadcast", len(d), len(as), len(bs))}, d: d, a: as, b: bs, op: op}
	c.run(j, j.ten.g.rows(), 2*j.ten.g.Total)
}

func (t *tensorJob) broadcast(lo, hi int) {
	d, as, bs, c := t.d, t.a, t.b, &t.g
	n, sa, sb := c.Dims[gpu.MaxRank-1], c.Strides[1][gpu.MaxRank-1], c.Strides[2][gpu.MaxRank-1]
	c.walkRows(3, lo, hi, func(off [3]int) {
		row, ao, bo := d[off[0]:off[0]+n], off[1], off[2]
		switch t.op {
		case gpu.BinAdd:
			for i := range row {
				row[i] = as[ao+i*sa] + bs[bo+i*sb]
			}
		case gpu.BinSub:
			for i := range row {
				row[i] = as[ao+i*sa] - bs[bo+i*sb]
			}
		case gpu.BinMul:
			for i := range row {
				row[i] = as[ao+i*sa] * bs[bo+i*sb]
			}
		case gpu.BinDiv:
			for i := range row {
				row[i] = as[ao+i*sa] / bs[bo+i*sb]
			}
		default: // the table's function (the four above are its entries' too)
			e, _ := t.op.Entry()
			for i := range row {
				row[i] = e.Forward(as[ao+i*sa], bs[bo+i*sb])
			}
		}
	})
}

// BroadcastPartial implements Backend.
func (c *CPU) BroadcastPartial(op gpu.BinOp, wrt int, dst, dy, a, b, y gpu.Buffer, g gpu.BroadcastGeom) {
	op.MustValid("BroadcastPartial")
	d, dys, as, bs := h(dst), h(dy), h(a), h(b)
	sameLen("BroadcastPartial", d, dys)
	var ys []float32
	if y != nil {
		ys = h(y)
		sameLen("BroadcastPartial", d, ys)
	}
	if wrt != 0 && wrt != 1 {
		panic(fmt.Sprintf("gpu: BroadcastPartial: operand %d", wrt))
	}
	j := &c.job
	j.op, j.ten = opPartial, tensorJob{g: indexSpace{g.Canon("BroadcastPartial", len(d), len(as), len(bs))}, d: d, a: as, b: bs,
		dy: dys, y: ys, wrt: wrt, op: op}
	c.run(j, j.ten.g.rows(), 2*j.ten.g.Total)
}

func (t *tensorJob) partial(lo, hi int) {
	d, as, bs, c := t.d, t.a, t.b, &t.g
	e, _ := t.op.Entry()
	n, sa, sb := c.Dims[gpu.MaxRank-1], c.Strides[1][gpu.MaxRank-1], c.Strides[2][gpu.MaxRank-1]
	c.walkRows(3, lo, hi, func(off [3]int) {
		o, ao, bo := off[0], off[1], off[2]
		row, dy := d[o:o+n], t.dy[o:o+n]
		// Tight loops for the products' partials (g times the other
		// operand), the shape of a squeeze-excitation gate's gradient; the
		// table's function elsewhere. The conformance suite holds both to
		// the entry's bits.
		switch {
		case t.op == gpu.BinMul && t.wrt == 0:
			for i := range row {
				row[i] = dy[i] * bs[bo+i*sb]
			}
			return
		case t.op == gpu.BinMul:
			for i := range row {
				row[i] = dy[i] * as[ao+i*sa]
			}
			return
		}
		for i := range row {
			var r float32
			if t.y != nil {
				r = t.y[o+i]
			}
			row[i] = e.Partial(t.wrt, dy[i], as[ao+i*sa], bs[bo+i*sb], r)
		}
	})
}

// ReduceSum implements Backend: each destination element is alpha times the
// float32 sum of its source elements, added in row-major order of the
// reduced axes.
func (c *CPU) ReduceSum(dst, src gpu.Buffer, g gpu.ReduceGeom, alpha float32) {
	d, s := h(dst), h(src)
	r := g.Canon("ReduceSum", len(d), len(s))
	if r.Out == 0 {
		return
	}
	j := &c.job
	j.op, j.ten = opReduce, tensorJob{g: indexSpace{r.Keep}, red: indexSpace{r.Red}, d: d, s: s, alpha: alpha}
	c.run(j, j.ten.g.rows(), len(s))
}

func (t *tensorJob) reduce(lo, hi int) {
	d, s, alpha := t.d, t.s, t.alpha
	kn, ks, kd := t.g.Dims[gpu.MaxRank-1], t.g.Strides[0][gpu.MaxRank-1], t.g.Strides[1][gpu.MaxRank-1]
	if t.red.Total == 1 { // nothing to sum: a scaled copy
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
func (g *indexSpace) sum(s []float32, base int) float32 {
	var acc float32
	if g.Total == 0 {
		return 0
	}
	n, st := g.Dims[gpu.MaxRank-1], g.Strides[0][gpu.MaxRank-1]
	var idx [gpu.MaxRank - 1]int
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
		k := gpu.MaxRank - 2
		for ; k >= 0; k-- {
			idx[k]++
			off += g.Strides[0][k]
			if idx[k] < g.Dims[k] {
				break
			}
			off -= idx[k] * g.Strides[0][k]
			idx[k] = 0
		}
		if k < 0 {
			return acc
		}
	}
}

// indexSpace is a gpu.IndexSpace with the CPU backend's walks as methods.
type indexSpace struct{ gpu.IndexSpace }

package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Cell names the recurrence of a Recurrent layer.
type Cell uint8

const (
	// LSTMCell is PyTorch's nn.LSTM cell, gates in the order i, f, g, o:
	//   i = σ(W_ii x + b_ii + W_hi h + b_hi), f and o likewise,
	//   g = tanh(W_ig x + b_ig + W_hg h + b_hg),
	//   c' = f ⊙ c + i ⊙ g,  h' = o ⊙ tanh(c').
	LSTMCell Cell = iota + 1
	// GRUCell is PyTorch's nn.GRU cell, gates in the order r, z, n:
	//   r = σ(W_ir x + b_ir + W_hr h + b_hr), z likewise,
	//   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
	//   h' = (1 − z) ⊙ n + z ⊙ h.
	GRUCell
)

// gates is the number of gate blocks in the weights: 4 (LSTM) or 3 (GRU).
func (c Cell) gates() int {
	if c == LSTMCell {
		return 4
	}
	return 3
}

// String returns the layer kind: "lstm" or "gru".
func (c Cell) String() string {
	switch c {
	case LSTMCell:
		return "lstm"
	case GRUCell:
		return "gru"
	}
	return fmt.Sprintf("cell(%d)", uint8(c))
}

// Recurrent is a stack of LSTM or GRU layers (PyTorch's nn.LSTM and nn.GRU
// with batch_first=True, zero initial state, no dropout, one direction).
// Its input is a sequence of T steps of In features per sample, read from
// the per-sample shape as T = C and In = H·W (an Embedding's T×1×Dim); its
// output is the top layer's hidden state after the last step, Shape{H, 1,
// 1}, or with AllSteps every step's, Shape{T, 1, H} (N×T×H).
//
// The parameters of layer k are PyTorch's weight_ih_lk (gates·H×in),
// weight_hh_lk (gates·H×H), bias_ih_lk and bias_hh_lk (gates·H each), in
// that order, so a flat vector compares with the PyTorch module's
// parameters(). They start from U(−1/√H, 1/√H), as PyTorch's.
//
// The layer is composed from the backend's kernels, so it runs on every
// backend: the input projections of all steps are one Gemm over a
// time-major copy of the input (T·N rows); each step adds its recurrent
// Gemm, permutes the N×gates×H pre-activations to gates×N×H
// (CopyStrided), so that each gate is one contiguous N×H block, and applies
// Activate, Mul and Axpy to those blocks. Backward runs back through time
// the same way and finishes with one Gemm per weight over all steps.
type Recurrent struct {
	Base
	Cell     Cell
	Hidden   int
	Layers   int
	AllSteps bool

	T, In int // steps and input features, from Setup

	ls         []rnnLayer
	capN, curN int
	// Scratch shared by the layers (capacity capN), and its views for curN.
	dp, t1, t2, dh, dhNext, dc, p gpu.Buffer
	dpv, t1v, t2v, dhv, dhNextv   gpu.Buffer
	dcv, pv, pHead, pLast         gpu.Buffer
	dpg                           []gpu.Buffer // the gates' blocks of dpv
	dx0, dx0v                     gpu.Buffer   // layer 0's input gradient, time-major
	// The permutations, for curN.
	toGates, fromGates, inTime, outBatch gpu.StridedGeom
}

// rnnLayer is one layer of a Recurrent: its buffers, time-major, with
// capacity for capN samples, and their views for curN samples, per step.
type rnnLayer struct {
	in int // input features

	x   gpu.Buffer // T×N×in input (layer 0: its own copy; above: the hs of the layer below)
	g   gpu.Buffer // T×N×gates·H input projections plus biases (LSTM: plus the recurrent part); Backward: their gradient
	gh  gpu.Buffer // GRU: T×N×3H recurrent projections plus b_hh; Backward: their gradient
	a   gpu.Buffer // T×gates×N×H activated gates
	c   gpu.Buffer // LSTM: T×N×H cell states
	tc  gpu.Buffer // LSTM: T×N×H tanh of the cell states
	hn  gpu.Buffer // GRU: T×N×H W_hn h + b_hn
	hs  gpu.Buffer // T×N×H hidden states
	dhs gpu.Buffer // T×N×H gradient with respect to hs from above

	xv, gv, ghv, hsv, dhsv gpu.Buffer // whole views for curN
	gTail, ghTail, hsHead  gpu.Buffer // steps 1..T-1 of g and gh, steps 0..T-2 of hs
	gt, ght, at, ct, tct   []gpu.Buffer
	hnt, hst, dhst, head   []gpu.Buffer // head: the first two gates' blocks of step t (i f; r z)
	gate                   [][]gpu.Buffer
}

// NewLSTM returns a stack of layers LSTM layers of hidden units.
func NewLSTM(name string, hidden, layers int, allSteps bool) *Recurrent {
	return &Recurrent{Base: Base{LayerName: name}, Cell: LSTMCell, Hidden: hidden, Layers: layers, AllSteps: allSteps}
}

// NewGRU returns a stack of layers GRU layers of hidden units.
func NewGRU(name string, hidden, layers int, allSteps bool) *Recurrent {
	return &Recurrent{Base: Base{LayerName: name}, Cell: GRUCell, Hidden: hidden, Layers: layers, AllSteps: allSteps}
}

// Kind implements Layer: "lstm" or "gru".
func (r *Recurrent) Kind() string { return r.Cell.String() }

// Setup implements Layer.
func (r *Recurrent) Setup(in []Shape) (Shape, error) {
	s, err := one(r.Kind(), in)
	if err != nil {
		return Shape{}, err
	}
	if r.Cell != LSTMCell && r.Cell != GRUCell {
		return Shape{}, fmt.Errorf("solver: %s: unknown cell %d", r.LayerName, uint8(r.Cell))
	}
	if r.Hidden <= 0 || r.Layers <= 0 {
		return Shape{}, fmt.Errorf("solver: %s %s: %d hidden units, %d layers: want positive", r.Kind(), r.LayerName, r.Hidden, r.Layers)
	}
	r.T, r.In = s.C, s.H*s.W
	if r.T <= 0 || r.In <= 0 {
		return Shape{}, fmt.Errorf("solver: %s %s: input %v", r.Kind(), r.LayerName, s)
	}
	if r.AllSteps {
		return Shape{C: r.T, H: 1, W: r.Hidden}, nil
	}
	return Shape{C: r.Hidden, H: 1, W: 1}, nil
}

// Params implements Layer: PyTorch's names and order.
func (r *Recurrent) Params() []ParamSpec {
	gh := r.Cell.gates() * r.Hidden
	var ps []ParamSpec
	for k := range r.Layers {
		in := r.In
		if k > 0 {
			in = r.Hidden
		}
		ps = append(ps,
			ParamSpec{Name: fmt.Sprintf("weight_ih_l%d", k), Dims: []int{gh, in}, FanIn: r.Hidden},
			ParamSpec{Name: fmt.Sprintf("weight_hh_l%d", k), Dims: []int{gh, r.Hidden}, FanIn: r.Hidden},
			ParamSpec{Name: fmt.Sprintf("bias_ih_l%d", k), Dims: []int{gh}, FanIn: r.Hidden},
			ParamSpec{Name: fmt.Sprintf("bias_hh_l%d", k), Dims: []int{gh}, FanIn: r.Hidden})
	}
	return ps
}

// Resize implements Layer: every buffer for n samples.
func (r *Recurrent) Resize(b gpu.Backend, n int) {
	if n <= r.capN {
		return
	}
	r.capN, r.curN = n, 0
	T, H, g := r.T, r.Hidden, r.Cell.gates()
	nh := n * H
	r.ls = make([]rnnLayer, r.Layers)
	for k := range r.ls {
		l := &r.ls[k]
		l.in = r.In
		if k > 0 {
			l.in = H
			l.x = r.ls[k-1].hs
		} else {
			l.x = b.Alloc(T * n * r.In)
		}
		l.g = b.Alloc(T * n * g * H)
		l.a = b.Alloc(T * g * nh)
		l.hs = b.Alloc(T * nh)
		l.dhs = b.Alloc(T * nh)
		if r.Cell == LSTMCell {
			l.c, l.tc = b.Alloc(T*nh), b.Alloc(T*nh)
		} else {
			l.gh, l.hn = b.Alloc(T*n*g*H), b.Alloc(T*nh)
		}
	}
	r.dp, r.p = b.Alloc(g*nh), b.Alloc(g*nh)
	r.t1, r.t2, r.dh, r.dhNext, r.dc = b.Alloc(nh), b.Alloc(nh), b.Alloc(nh), b.Alloc(nh), b.Alloc(nh)
	r.dx0 = b.Alloc(T * n * r.In)
}

// batch builds the views and permutations for n samples (n <= capN); a
// steady batch size allocates nothing.
func (r *Recurrent) batch(b gpu.Backend, n int) {
	if n == r.curN {
		return
	}
	r.curN = n
	T, H, g := r.T, r.Hidden, r.Cell.gates()
	nh, ng := n*H, n*g*H
	v := func(buf gpu.Buffer, off, size int) gpu.Buffer { return b.View(buf, off, size) }
	for k := range r.ls {
		l := &r.ls[k]
		l.xv, l.gv, l.hsv, l.dhsv = v(l.x, 0, T*n*l.in), v(l.g, 0, T*ng), v(l.hs, 0, T*nh), v(l.dhs, 0, T*nh)
		l.gTail, l.hsHead = nil, nil
		if T > 1 {
			l.gTail, l.hsHead = v(l.g, ng, (T-1)*ng), v(l.hs, 0, (T-1)*nh)
		}
		l.gt, l.at, l.hst, l.dhst, l.head = make([]gpu.Buffer, T), make([]gpu.Buffer, T), make([]gpu.Buffer, T), make([]gpu.Buffer, T), make([]gpu.Buffer, T)
		l.gate = make([][]gpu.Buffer, T)
		l.ct, l.tct, l.ght, l.hnt = nil, nil, nil, nil
		if r.Cell == LSTMCell {
			l.ct, l.tct = make([]gpu.Buffer, T), make([]gpu.Buffer, T)
		} else {
			l.ght, l.hnt = make([]gpu.Buffer, T), make([]gpu.Buffer, T)
			l.ghv = v(l.gh, 0, T*ng)
			l.ghTail = nil
			if T > 1 {
				l.ghTail = v(l.gh, ng, (T-1)*ng)
			}
		}
		for t := range T {
			l.gt[t], l.at[t], l.hst[t], l.dhst[t] = v(l.g, t*ng, ng), v(l.a, t*ng, ng), v(l.hs, t*nh, nh), v(l.dhs, t*nh, nh)
			l.head[t] = v(l.a, t*ng, 2*nh)
			l.gate[t] = make([]gpu.Buffer, g)
			for q := range g {
				l.gate[t][q] = v(l.a, t*ng+q*nh, nh)
			}
			if r.Cell == LSTMCell {
				l.ct[t], l.tct[t] = v(l.c, t*nh, nh), v(l.tc, t*nh, nh)
			} else {
				l.ght[t], l.hnt[t] = v(l.gh, t*ng, ng), v(l.hn, t*nh, nh)
			}
		}
	}
	r.dpv, r.pv = v(r.dp, 0, g*nh), v(r.p, 0, g*nh)
	r.pHead, r.pLast = v(r.p, 0, 2*nh), v(r.p, 2*nh, nh)
	r.dpg = make([]gpu.Buffer, g)
	for q := range g {
		r.dpg[q] = v(r.dp, q*nh, nh)
	}
	r.t1v, r.t2v, r.dhv, r.dhNextv, r.dcv = v(r.t1, 0, nh), v(r.t2, 0, nh), v(r.dh, 0, nh), v(r.dhNext, 0, nh), v(r.dc, 0, nh)
	r.dx0v = v(r.dx0, 0, T*n*r.In)
	// N×gates×H (a Gemm's rows) to gates×N×H (one block per gate) and back.
	r.toGates = gpu.StridedGeom{Dims: []int{n, g, H}, Src: []int{g * H, H, 1}, Dst: []int{H, nh, 1}}
	r.fromGates = gpu.StridedGeom{Dims: []int{n, g, H}, Src: []int{H, nh, 1}, Dst: []int{g * H, H, 1}}
	// Batch-first N×T×In to time-major T×N×In; time-major T×N×H to N×T×H.
	r.inTime = gpu.StridedGeom{Dims: []int{n, T, r.In}, Src: []int{T * r.In, r.In, 1}, Dst: []int{r.In, n * r.In, 1}}
	r.outBatch = gpu.StridedGeom{Dims: []int{n, T, H}, Src: []int{H, nh, 1}, Dst: []int{T * H, H, 1}}
}

// BackwardReads implements BackwardReader: the layer keeps what it needs.
func (*Recurrent) BackwardReads(bool) (in, out bool) { return false, false }

// Forward implements Layer. x: N×T×In; y: N×H (last step) or N×T×H.
func (r *Recurrent) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	b, n := p.B, p.N
	r.batch(b, n)
	T, gh := r.T, r.Cell.gates()*r.Hidden
	b.CopyStrided(r.ls[0].xv, in[0], r.inTime, false)
	for k := range r.ls {
		l := &r.ls[k]
		wih, whh, bih, bhh := r.P[4*k], r.P[4*k+1], r.P[4*k+2], r.P[4*k+3]
		// Every step's input projection at once: T·N rows.
		b.Gemm(false, true, T*n, gh, l.in, 1, l.xv, wih, 0, l.gv)
		b.AddBias(l.gv, bih, T*n, gh, 1)
		if r.Cell == LSTMCell {
			b.AddBias(l.gv, bhh, T*n, gh, 1)
			for t := range T {
				r.lstmStep(b, n, l, whh, t)
			}
		} else {
			for t := range T {
				r.gruStep(b, n, l, whh, bhh, t)
			}
		}
	}
	top := &r.ls[len(r.ls)-1]
	if r.AllSteps {
		b.CopyStrided(out, top.hsv, r.outBatch, false)
	} else {
		b.Copy(out, top.hst[T-1])
	}
}

// lstmStep runs step t of an LSTM layer whose g holds the input part.
func (r *Recurrent) lstmStep(b gpu.Backend, n int, l *rnnLayer, whh gpu.Buffer, t int) {
	H := r.Hidden
	if t > 0 {
		b.Gemm(false, true, n, 4*H, H, 1, l.hst[t-1], whh, 1, l.gt[t])
	}
	b.CopyStrided(l.at[t], l.gt[t], r.toGates, false)
	gi, gf, gg, gO := l.gate[t][0], l.gate[t][1], l.gate[t][2], l.gate[t][3]
	b.Activate(gpu.Sigmoid, l.head[t], l.head[t]) // i and f
	b.Activate(gpu.Tanh, gg, gg)
	b.Activate(gpu.Sigmoid, gO, gO)
	b.Mul(l.ct[t], gi, gg)
	if t > 0 {
		b.Mul(r.t1v, gf, l.ct[t-1])
		b.Axpy(1, r.t1v, l.ct[t])
	}
	b.Activate(gpu.Tanh, l.tct[t], l.ct[t])
	b.Mul(l.hst[t], gO, l.tct[t])
}

// gruStep runs step t of a GRU layer whose g holds the input part and b_ih.
func (r *Recurrent) gruStep(b gpu.Backend, n int, l *rnnLayer, whh, bhh gpu.Buffer, t int) {
	H := r.Hidden
	if t > 0 {
		b.Gemm(false, true, n, 3*H, H, 1, l.hst[t-1], whh, 0, l.ght[t])
	} else {
		b.Fill(l.ght[t], 0)
	}
	b.AddBias(l.ght[t], bhh, n, 3*H, 1)
	b.CopyStrided(l.at[t], l.gt[t], r.toGates, false)
	b.CopyStrided(r.pv, l.ght[t], r.toGates, false)
	gr, gz, gn := l.gate[t][0], l.gate[t][1], l.gate[t][2]
	b.Axpy(1, r.pHead, l.head[t]) // r and z: input and recurrent parts
	b.Activate(gpu.Sigmoid, l.head[t], l.head[t])
	b.Copy(l.hnt[t], r.pLast)
	b.Mul(r.t1v, gr, l.hnt[t])
	b.Axpy(1, r.t1v, gn)
	b.Activate(gpu.Tanh, gn, gn)
	// h = n + z ⊙ (h_prev − n)
	if t > 0 {
		b.Copy(r.t1v, l.hst[t-1])
	} else {
		b.Fill(r.t1v, 0)
	}
	b.Axpy(-1, gn, r.t1v)
	b.Mul(r.t2v, gz, r.t1v)
	b.Copy(l.hst[t], gn)
	b.Axpy(1, r.t2v, l.hst[t])
}

// Backward implements Layer: back-propagation through time.
func (r *Recurrent) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	b, n := p.B, p.N
	r.batch(b, n)
	T, H, gh := r.T, r.Hidden, r.Cell.gates()*r.Hidden
	top := &r.ls[len(r.ls)-1]
	if r.AllSteps {
		b.CopyStrided(top.dhsv, dout, r.inTimeH(), false)
	} else {
		b.Fill(top.dhsv, 0)
		b.Copy(top.dhst[T-1], dout)
	}
	for k := len(r.ls) - 1; k >= 0; k-- {
		l := &r.ls[k]
		wih, whh := r.P[4*k], r.P[4*k+1]
		b.Fill(r.dcv, 0)
		for t := T - 1; t >= 0; t-- {
			b.Copy(r.dhv, l.dhst[t])
			if t < T-1 {
				b.Axpy(1, r.dhNextv, r.dhv)
			}
			if r.Cell == LSTMCell {
				r.lstmBack(b, n, l, whh, t)
			} else {
				r.gruBack(b, n, l, whh, t)
			}
		}
		if paramGrads {
			gw := r.G[4*k : 4*k+4]
			b.Gemm(true, false, gh, l.in, T*n, 1, l.gv, l.xv, 0, gw[0])
			tail := l.gTail
			if r.Cell == GRUCell {
				tail = l.ghTail
			}
			if T > 1 {
				b.Gemm(true, false, gh, H, (T-1)*n, 1, tail, l.hsHead, 0, gw[1])
			} else {
				b.Fill(gw[1], 0)
			}
			b.BiasGrad(gw[2], l.gv, T*n, gh, 1)
			if r.Cell == LSTMCell {
				b.Copy(gw[3], gw[2])
			} else {
				b.BiasGrad(gw[3], l.ghv, T*n, gh, 1)
			}
		}
		switch {
		case k > 0:
			b.Gemm(false, false, T*n, H, gh, 1, l.gv, wih, 0, r.ls[k-1].dhsv)
		case din[0] != nil:
			b.Gemm(false, false, T*n, r.In, gh, 1, l.gv, wih, 0, r.dx0v)
			b.CopyStrided(din[0], r.dx0v, r.outBatchIn(), false)
		}
	}
}

// inTimeH is inTime for H features (the output gradient N×T×H).
func (r *Recurrent) inTimeH() gpu.StridedGeom {
	g := r.outBatch
	return gpu.StridedGeom{Dims: g.Dims, Src: g.Dst, Dst: g.Src}
}

// outBatchIn is outBatch for In features (the input gradient).
func (r *Recurrent) outBatchIn() gpu.StridedGeom {
	g := r.inTime
	return gpu.StridedGeom{Dims: g.Dims, Src: g.Dst, Dst: g.Src}
}

// lstmBack runs step t back: dh holds the gradient with respect to h_t, dc
// the part of c_t's from step t+1. It leaves the gate pre-activations'
// gradient in g_t, c_{t−1}'s part in dc and, for t > 0, h_{t−1}'s in dhNext.
func (r *Recurrent) lstmBack(b gpu.Backend, n int, l *rnnLayer, whh gpu.Buffer, t int) {
	H := r.Hidden
	gi, gf, gg, gO := l.gate[t][0], l.gate[t][1], l.gate[t][2], l.gate[t][3]
	di, df, dg, do := r.dpg[0], r.dpg[1], r.dpg[2], r.dpg[3]
	b.Mul(r.t1v, r.dhv, l.tct[t]) // ∂h/∂o
	b.ActivateBackward(gpu.Sigmoid, do, r.t1v, gO)
	b.Mul(r.t1v, r.dhv, gO) // ∂h/∂tanh(c)
	b.ActivateBackward(gpu.Tanh, r.t2v, r.t1v, l.tct[t])
	b.Axpy(1, r.t2v, r.dcv)
	b.Mul(r.t1v, r.dcv, gg)
	b.ActivateBackward(gpu.Sigmoid, di, r.t1v, gi)
	b.Mul(r.t1v, r.dcv, gi)
	b.ActivateBackward(gpu.Tanh, dg, r.t1v, gg)
	if t > 0 {
		b.Mul(r.t1v, r.dcv, l.ct[t-1])
		b.ActivateBackward(gpu.Sigmoid, df, r.t1v, gf)
	} else {
		b.Fill(df, 0)
	}
	b.Mul(r.t1v, r.dcv, gf)
	b.Copy(r.dcv, r.t1v)
	b.CopyStrided(l.gt[t], r.dpv, r.fromGates, false)
	if t > 0 {
		b.Gemm(false, false, n, H, 4*H, 1, l.gt[t], whh, 0, r.dhNextv)
	}
}

// gruBack runs step t back: dh holds the gradient with respect to h_t. It
// leaves the gradients of the input and recurrent pre-activations in g_t
// and gh_t and, for t > 0, h_{t−1}'s in dhNext.
func (r *Recurrent) gruBack(b gpu.Backend, n int, l *rnnLayer, whh gpu.Buffer, t int) {
	H := r.Hidden
	gr, gz, gn := l.gate[t][0], l.gate[t][1], l.gate[t][2]
	dr, dz, dn := r.dpg[0], r.dpg[1], r.dpg[2]
	// z: dh ⊙ (h_prev − n)
	if t > 0 {
		b.Copy(r.t1v, l.hst[t-1])
	} else {
		b.Fill(r.t1v, 0)
	}
	b.Axpy(-1, gn, r.t1v)
	b.Mul(r.t2v, r.dhv, r.t1v)
	b.ActivateBackward(gpu.Sigmoid, dz, r.t2v, gz)
	// n: dh ⊙ (1 − z); t1 keeps dh ⊙ z, h_prev's direct part
	b.Mul(r.t1v, r.dhv, gz)
	b.Copy(r.t2v, r.dhv)
	b.Axpy(-1, r.t1v, r.t2v)
	b.ActivateBackward(gpu.Tanh, dn, r.t2v, gn)
	// r: dn ⊙ hn
	b.Mul(r.t2v, dn, l.hnt[t])
	b.ActivateBackward(gpu.Sigmoid, dr, r.t2v, gr)
	b.CopyStrided(l.gt[t], r.dpv, r.fromGates, false)
	// The recurrent n part is r ⊙ dn.
	b.Mul(r.t2v, dn, gr)
	b.Copy(dn, r.t2v)
	b.CopyStrided(l.ght[t], r.dpv, r.fromGates, false)
	if t > 0 {
		b.Copy(r.dhNextv, r.t1v)
		b.Gemm(false, false, n, H, 3*H, 1, l.ght[t], whh, 1, r.dhNextv)
	}
}

// scratch implements batchScratcher: what Resize allocates for n samples.
func (r *Recurrent) scratch(n int) int {
	T, H, g := r.T, r.Hidden, r.Cell.gates()
	nh := n * H
	s := 2*T*n*r.In + 2*g*nh + 5*nh // the first layer's x and dx0; dp, p; t1 .. dc
	for range r.Layers {
		s += T*n*g*H + T*g*nh + 2*T*nh // g, a, hs, dhs
		if r.Cell == LSTMCell {
			s += 2 * T * nh
		} else {
			s += T*n*g*H + T*nh
		}
	}
	return s
}

package worker

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// Compression and layer-wise overlap on the worker's side (see hub's
// parts.go for the protocol): the session's codec encodes every pushed
// part, with error feedback (compress.Feedback) so that what a lossy codec
// did not send is added to the next gradient; the residual is forgotten
// whenever the hub replaces the weights (Welcome, ResyncAnswer). Merged
// parts are decoded into a buffer as they come; the step is taken when the
// final Merged arrives and every part is there.

// parts holds the codec and the gradient's parts of the session.
type parts struct {
	codec     compress.Codec
	fb        *compress.Feedback
	fraction  float64        // a top-k session's fraction (compress.TopK)
	warmup    uint64         // iterations of denser top-k pushes (Session.TopKWarmup)
	bounds    []int          // part j is [bounds[j], bounds[j+1])
	grad      []float32      // the part being pushed, downloaded
	decay     float32        // Adam correction's L2 decay (Session.WorkerWeightDecay)
	weights   []float32      // the weights, downloaded for decay (snapshot)
	trainable []solver.Range // the ranges that learn, for decay
	pushed    []bool         // parts of the compute in flight already pushed
	sentBN    bool           // the compute's batch-norm statistics went out
	merged    []float32      // the merged update, part by part
	got       []bool         // parts of the merged update received
	zero      []bool         // parts in frozen layers (Session.ZeroParts): never pushed nor merged
}

// setup reads the session's codec and parts for net (frozen as the
// session says).
func (p *parts) setup(s wire.Session, net *solver.Net) error {
	n := net.NumParams()
	codec, err := compress.Parse(s.Compression)
	if err != nil {
		return fmt.Errorf("%w: the session's compression: %w", ErrModel, err)
	}
	starts := s.Parts
	if len(starts) == 0 {
		starts = []int{0}
	}
	if starts[0] != 0 {
		return fmt.Errorf("%w: the session's parts start at %d, want 0", ErrModel, starts[0])
	}
	for j := 1; j < len(starts); j++ {
		if starts[j] <= starts[j-1] || starts[j] >= n {
			return fmt.Errorf("%w: the session's part %d starts at %d (after %d, of %d values)", ErrModel, j, starts[j], starts[j-1], n)
		}
	}
	zero, err := zeroParts(s.ZeroParts, starts, n, net.Trainable())
	if err != nil {
		return err
	}
	p.codec = codec
	if tk, ok := codec.(*compress.TopK); ok {
		if s.TopKMin < 0 {
			return fmt.Errorf("%w: the session's top-k minimum %d", ErrModel, s.TopKMin)
		}
		tk.Min = s.TopKMin
		p.fraction, p.warmup = tk.Fraction, s.TopKWarmup
	} else if s.TopKMin != 0 || s.TopKWarmup != 0 {
		return fmt.Errorf("%w: the session's top-k minimum %d and warm-up %d with compression %s", ErrModel, s.TopKMin, s.TopKWarmup, codec)
	}
	p.fb = compress.NewFeedback(codec, n)
	if m := s.WorkerMomentum; m != 0 || s.WorkerBeta2 != 0 {
		if codec.Format() != compress.FormatSparse || s.Momentum != 0 {
			return fmt.Errorf("%w: the session's worker momentum %v, β2 %v with compression %s and node momentum %v (want top-k and 0)", ErrModel, m, s.WorkerBeta2, codec, s.Momentum)
		}
		if s.WorkerBeta2 != 0 {
			if s.WeightDecay != 0 || !(s.WorkerWeightDecay >= 0) {
				return fmt.Errorf("%w: the session's Adam correction with worker decay %v and node decay %v (want 0 or more, and 0)", ErrModel, s.WorkerWeightDecay, s.WeightDecay)
			}
			if err := p.fb.SetAdam(m, s.WorkerBeta2, s.WorkerEps); err != nil {
				return fmt.Errorf("%w: the session's Adam correction: %w", ErrModel, err)
			}
			p.decay = s.WorkerWeightDecay
			if p.decay > 0 {
				p.weights = make([]float32, n)
			}
		} else if err := p.fb.SetMomentum(m); err != nil {
			return fmt.Errorf("%w: the session's worker momentum: %w", ErrModel, err)
		}
	} else if s.WorkerEps != 0 || s.WorkerWeightDecay != 0 {
		return fmt.Errorf("%w: the session's worker ε %v and decay %v without Adam correction", ErrModel, s.WorkerEps, s.WorkerWeightDecay)
	}
	p.bounds = append(append([]int(nil), starts...), n)
	p.grad = make([]float32, n)
	p.pushed = make([]bool, len(starts))
	p.merged = make([]float32, n)
	p.got = make([]bool, len(starts))
	p.zero = zero
	return nil
}

// zeroParts checks the session's zero parts against its parts (starts, of
// n values) and the net's trainable ranges, and returns them as a flag per
// part. A zero part that overlapped a trainable range would drop that
// range's gradient on every node: the hub and this worker disagree about
// what is frozen.
func zeroParts(list, starts []int, n int, trainable []solver.Range) ([]bool, error) {
	zero := make([]bool, len(starts))
	for i, j := range list {
		if j < 0 || j >= len(starts) || (i > 0 && j <= list[i-1]) {
			return nil, fmt.Errorf("%w: the session's zero parts %v (want increasing parts of %d)", ErrModel, list, len(starts))
		}
		lo, hi := starts[j], n
		if j+1 < len(starts) {
			hi = starts[j+1]
		}
		for _, r := range trainable {
			if r.Off < hi && lo < r.Off+r.Len {
				return nil, fmt.Errorf("%w: the session's zero part %d [%d, %d) holds parameters [%d, %d) that learn here", ErrModel, j, lo, hi, r.Off, r.Off+r.Len)
			}
		}
		zero[j] = true
	}
	if len(list) == len(starts) {
		return nil, fmt.Errorf("%w: every one of the session's %d parts is zero: nothing to push", ErrModel, len(starts))
	}
	return zero, nil
}

// snapshot copies the net's weights for Adam correction's decay, before a
// pass (the core owns the net then); without decay it does nothing.
func (p *parts) snapshot(net *solver.Net) {
	if p.decay > 0 {
		net.B.Download(p.weights, net.Params)
		p.trainable = net.Trainable()
	}
}

// count is the number of parts.
func (p *parts) count() int { return len(p.bounds) - 1 }

// resetState forgets what belongs to the weights the net held: the
// residual and the merged parts received.
func (p *parts) resetState() {
	if p.fb != nil {
		p.fb.Reset()
	}
	clear(p.got)
}

// PartDone reports that the backward pass of the compute in flight has
// produced part Part of the gradient (Session.Parts; ComputeRequest.Parts
// gives the offsets): its values in the trainer's Net.Grads are final. The
// core pushes it at once, so that it crosses the network while the pass
// goes on. Samples and Loss are as in ComputeDone; ComputeNanos is the
// time since the pass started. Parts not reported are pushed by Computed.
type PartDone struct {
	Iteration    uint64
	Part         int
	Samples      int
	Loss         float64
	ComputeNanos int64
	// Grad, when set, is the part's values, downloaded by the driver (its
	// length is the part's); State is then Net.State, downloaded after the
	// forward pass (empty for a net without any). A driver whose pass is
	// still running on another goroutine must download them there and
	// pass them here, since a backend is not safe for concurrent use; the
	// core then does not touch the net. Without Grad the core downloads
	// both itself (a driver that calls PartDone between passes, like the
	// simulator). The core reads them during the call only.
	Grad, State []float32
}

// PartDone pushes a part of the gradient before the whole pass is done
// (see the type). It is optional: a driver without per-layer completion
// calls Computed alone. The net stays the driver's.
func (c *Core) PartDone(d PartDone) error {
	if c.phase == phaseDone {
		return fmt.Errorf("%w: part done after the end", ErrDone)
	}
	if !c.pending {
		return c.refuse(fmt.Errorf("%w: part done with no compute out", ErrUnexpected))
	}
	if d.Iteration != c.iter || d.Samples < 1 || d.Samples > c.batch || d.ComputeNanos < 0 ||
		d.Part < 0 || d.Part >= c.parts.count() || c.parts.pushed[d.Part] {
		return c.refuse(fmt.Errorf("%w: part done (iteration %d, part %d, %d samples, %d ns) for iteration %d, batch %d, %d parts",
			ErrBadCompute, d.Iteration, d.Part, d.Samples, d.ComputeNanos, c.iter, c.batch, c.parts.count()))
	}
	if d.Grad != nil {
		if n := c.parts.bounds[d.Part+1] - c.parts.bounds[d.Part]; len(d.Grad) != n {
			return c.refuse(fmt.Errorf("%w: part %d done with %d values, want %d", ErrBadCompute, d.Part, len(d.Grad), n))
		}
		if n := c.tr.Net.State.Len(); len(d.State) != n {
			return c.refuse(fmt.Errorf("%w: part %d done with %d batch-norm state values, want %d", ErrBadCompute, d.Part, len(d.State), n))
		}
	}
	if c.superseded() || math.IsNaN(d.Loss) || math.IsInf(d.Loss, 0) || c.parts.zero[d.Part] {
		// Computed says why; nothing goes out. A zero part (frozen
		// layers) never goes out: a driver may report it all the same.
		return nil
	}
	c.parts.pushed[d.Part] = true
	if !c.pushValues(d.Part, d.Iteration, d.Samples, d.Loss, d.ComputeNanos, d.Grad, d.State) {
		c.parts.pushed[d.Part] = false
	}
	return nil
}

// pushValues encodes part j of the gradient and sends it, and reports
// false (sending nothing) when the part is not finite. g and st are the
// part and the batch-norm state as the caller downloaded them (PartDone's
// driver, or Computed), or nil for the core to download them from the net.
func (c *Core) pushValues(j int, it uint64, samples int, loss float64, nanos int64, g, st []float32) bool {
	p := &c.parts
	lo, hi := p.bounds[j], p.bounds[j+1]
	if g == nil {
		g = p.grad[lo:hi]
		c.tr.Net.B.Download(g, c.tr.Net.B.View(c.tr.Net.Grads, lo, hi-lo))
	}
	if state.CheckFinite("gradient", g) != nil {
		return false
	}
	m := &wire.Push{Header: wire.Header{Iteration: it}, Samples: samples, ComputeNanos: nanos,
		Loss: float32(loss), Part: j, Battery: c.battery}
	c.told = c.battery
	if p.codec.Lossless() {
		m.Gradient = wire.Floats(append([]float32(nil), g...))
	} else {
		if tk, ok := p.codec.(*compress.TopK); ok {
			tk.Fraction = compress.WarmupFraction(p.fraction, it, p.warmup)
		}
		if p.decay > 0 {
			// Adam's L2 decay goes through the worker's Adam, as in
			// solver.Adam: the gradient Adam sees is g + decay·w, on the
			// ranges that learn (frozen ones stay zero, unsent). The
			// weights are the copy next took before the pass (the net may
			// be busy on the driver's goroutine now), and the sum goes to
			// p.grad: the driver's g is only read.
			w, dst := p.weights[lo:hi], p.grad[lo:hi]
			copy(dst, g)
			for _, r := range p.trainable {
				for i := max(r.Off, lo); i < min(r.Off+r.Len, hi); i++ {
					dst[i-lo] += float32(p.decay * w[i-lo]) // float32(): not fused on any target
				}
			}
			g = dst
		}
		m.Enc = p.fb.Append(nil, g, lo)
	}
	if !p.sentBN {
		// The statistics the forward pass moved: final before any part.
		if n := c.tr.Net.State.Len(); n > 0 {
			m.State = make(wire.Floats, n)
			if st != nil {
				copy(m.State, st)
			} else {
				c.tr.Net.B.Download(m.State, c.tr.Net.State)
			}
		}
		p.sentBN = true
	}
	c.send(m)
	return true
}

// mergedPart decodes a Merged's part into the merged buffer.
func (c *Core) mergedPart(m *wire.Merged) error {
	p := &c.parts
	j := m.Part
	if j < 0 || j >= p.count() {
		return fmt.Errorf("part %d of a session of %d", j, p.count())
	}
	if p.zero[j] {
		return fmt.Errorf("merged part %d lies in frozen layers (the session's zero parts)", j)
	}
	dst := p.merged[p.bounds[j]:p.bounds[j+1]]
	if p.codec.Lossless() {
		if len(m.Enc) > 0 {
			return fmt.Errorf("an encoded merged part in a session without compression")
		}
		if err := m.Gradient.CheckLen(fmt.Sprintf("merged part %d", j), len(dst)); err != nil {
			return err
		}
		if err := state.CheckFinite("merged gradient", m.Gradient); err != nil {
			return err
		}
		copy(dst, m.Gradient)
	} else {
		if len(m.Gradient) > 0 {
			return fmt.Errorf("raw merged floats in a session compressed with %s", p.codec)
		}
		if err := compress.Decode(dst, m.Enc, 0); err != nil {
			return fmt.Errorf("merged part %d: %w", j, err)
		}
	}
	p.got[j] = true
	return nil
}

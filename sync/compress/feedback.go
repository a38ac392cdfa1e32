package compress

import (
	"fmt"
	"math"
)

// Feedback encodes a worker's gradient with error feedback: before
// encoding, the residual — what earlier encodings did not deliver — is
// added to the gradient, and afterwards the residual becomes the part of
// that sum the receiver will not see (the sum minus the decoded payload).
// Nothing is lost, only delayed: top-k's small values add up until they
// are large enough to be sent, and int8's and fp16's rounding errors are
// corrected in the next step.
//
// The residual covers the whole parameter vector; Append encodes a part
// of it (a layer, for the layer-wise push), so parts can be encoded in any
// order. With a lossless codec there is no residual.
//
// With momentum correction (SetMomentum, for top-k sessions) the worker
// runs the SGD momentum itself: it keeps a velocity u ← m·u + g and
// accumulates it into the residual (v ← v + u) instead of the raw
// gradient, and sends the top-k of v. Delivered plus residual is then
// exactly what dense momentum SGD would have applied, only delayed, and
// the nodes step with plain SGD (momentum 0) on the merged update:
// applying momentum to sparse, delayed spikes would amplify each one over
// many iterations (Lin et al., "Deep Gradient Compression", ICLR 2018).
// Mask adds that paper's momentum factor masking (u cleared where a value
// went out); cotrain leaves it off: on lenet-caffe's 200-iteration run it
// cost about a point of accuracy (docs/compression.md).
//
// With Adam correction (SetAdam) the worker runs all of Adam on its own
// gradient: its moments m and v, bias-corrected as Adam does, give the
// step direction m̂/(√v̂+ε), which is what accumulates into the residual;
// the nodes step with plain SGD (momentum 0) at Adam's learning rate.
// Delivered plus residual is then exactly the sum of Adam's steps at
// learning rate 1; the moments are the worker's own (of its own batches),
// not the merged gradient's: the only departure from dense Adam besides
// the delay. Measured on lenet-caffe it is no better than Adam on the
// nodes (both lose about 1.6 points under top-k 1%: Adam moves every
// coordinate each step, which 1% a step cannot follow), so cotrain does
// not turn it on by itself (docs/compression.md).
type Feedback struct {
	// Mask clears the velocity where a value was sent (momentum factor
	// masking); only with momentum correction.
	Mask bool

	codec    Codec
	momentum float32 // β1 under Adam correction
	residual []float32
	velocity []float32 // momentum correction's u, Adam's m; nil without
	second   []float32 // Adam correction's v; nil without it
	beta2    float32
	eps      float32
	steps    map[int]int // Adam correction: steps taken, by part offset
	sum      []float32   // scratch: gradient plus residual
	seen     []float32   // scratch: what the receiver decodes
}

// NewFeedback returns error feedback for codec over n parameters.
func NewFeedback(codec Codec, n int) *Feedback {
	f := &Feedback{codec: codec}
	if !codec.Lossless() {
		f.residual = make([]float32, n)
		f.sum = make([]float32, n)
		f.seen = make([]float32, n)
	}
	return f
}

// SetMomentum turns momentum correction on with momentum m in (0, 1) (see
// the type), or off with 0; the velocity starts at zero. It returns an
// error for m outside [0, 1) or a lossless codec (which has no residual to
// accumulate into: its nodes apply momentum themselves).
func (f *Feedback) SetMomentum(m float32) error {
	if !(m >= 0 && m < 1) {
		return fmt.Errorf("compress: momentum correction with momentum %v, want [0, 1)", m)
	}
	if m > 0 && f.residual == nil {
		return fmt.Errorf("compress: momentum correction with the lossless codec %s", f.codec)
	}
	f.momentum = m
	f.velocity, f.second, f.steps = nil, nil, nil
	if m > 0 {
		f.velocity = make([]float32, len(f.residual))
	}
	return nil
}

// SetAdam turns Adam correction on with Adam's β1, β2 and ε (see the
// type); the moments start at zero. It returns an error for a β outside
// [0, 1), an ε that is not positive and finite, or a lossless codec.
// SetMomentum turns it off again.
func (f *Feedback) SetAdam(beta1, beta2, eps float32) error {
	switch {
	case !(beta1 >= 0 && beta1 < 1), !(beta2 >= 0 && beta2 < 1):
		return fmt.Errorf("compress: Adam correction with β1 %v, β2 %v, want [0, 1)", beta1, beta2)
	case !(eps > 0 && eps < math.MaxFloat32):
		return fmt.Errorf("compress: Adam correction with ε %v, want a positive number", eps)
	case f.residual == nil:
		return fmt.Errorf("compress: Adam correction with the lossless codec %s", f.codec)
	}
	f.momentum, f.beta2, f.eps = beta1, beta2, eps
	f.velocity = make([]float32, len(f.residual))
	f.second = make([]float32, len(f.residual))
	f.steps = make(map[int]int)
	return nil
}

// Adam reports whether Adam correction is on.
func (f *Feedback) Adam() bool { return f.second != nil }

// Momentum returns the momentum of the correction (Adam's β1), 0 when
// off.
func (f *Feedback) Momentum() float32 { return f.momentum }

// Codec returns the codec.
func (f *Feedback) Codec() Codec { return f.codec }

// Append appends the encoding of g plus the residual of values
// [off, off+len(g)) to dst, and keeps the new residual there. It panics if
// the part lies outside the vector (the caller's bug).
func (f *Feedback) Append(dst []byte, g []float32, off int) []byte {
	if f.residual == nil {
		return f.codec.Append(dst, g)
	}
	res := f.residual[off : off+len(g)]
	sum, seen := f.sum[:len(g)], f.seen[:len(g)]
	var vel []float32
	if f.second != nil {
		f.adam(sum, g, off)
	} else if f.velocity != nil {
		vel = f.velocity[off : off+len(g)]
		m := f.momentum
		for i, v := range g {
			u := float32(m*vel[i]) + v // float32(): not fused on any target
			vel[i] = u
			sum[i] = u + res[i]
		}
	} else {
		for i, v := range g {
			sum[i] = v + res[i]
		}
	}
	start := len(dst)
	dst = f.codec.Append(dst, sum)
	if err := Decode(seen, dst[start:], f.codec.Format()); err != nil {
		// Only a non-finite sum fails to decode: the receiver refuses it
		// too, so keep the residual as it was rather than poison it (a
		// velocity that overflowed stays so until the next Reset).
		return dst
	}
	for i := range sum {
		res[i] = sum[i] - seen[i]
	}
	if vel != nil && f.Mask {
		for i, s := range seen {
			if s != 0 {
				vel[i] = 0
			}
		}
	}
	return dst
}

// adam writes Adam's step direction for part g at off, plus the residual,
// into sum, and moves the moments and the part's step count on. The
// arithmetic is solver.Adam's (bias corrections in float64, rounded), the
// learning rate left to the nodes.
func (f *Feedback) adam(sum, g []float32, off int) {
	t := f.steps[off] + 1
	f.steps[off] = t
	b1, b2, eps := f.momentum, f.beta2, f.eps
	bc1 := float32(1 / (1 - math.Pow(float64(b1), float64(t))))
	bc2Sqrt := float32(math.Sqrt(1 - math.Pow(float64(b2), float64(t))))
	res := f.residual[off : off+len(g)]
	m, v := f.velocity[off:off+len(g)], f.second[off:off+len(g)]
	for i, gv := range g {
		mi := float32(b1*m[i]) + float32((1-b1)*gv) // float32(): not fused on any target
		vi := float32(b2*v[i]) + float32((1-b2)*gv*gv)
		m[i], v[i] = mi, vi
		d := bc1 * mi / (float32(math.Sqrt(float64(vi)))/bc2Sqrt + eps)
		sum[i] = d + res[i]
	}
}

// Velocity returns momentum correction's velocity (read only), nil when
// the correction is off.
func (f *Feedback) Velocity() []float32 { return f.velocity }

// Residual returns the residual (read only), nil for a lossless codec.
func (f *Feedback) Residual() []float32 { return f.residual }

// Reset forgets the residual: the weights were replaced, and what was not
// sent belongs to the old ones.
func (f *Feedback) Reset() {
	clear(f.residual)
	clear(f.velocity)
	clear(f.second)
	clear(f.steps)
}

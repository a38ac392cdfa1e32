package compress

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
type Feedback struct {
	codec    Codec
	residual []float32
	sum      []float32 // scratch: gradient plus residual
	seen     []float32 // scratch: what the receiver decodes
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
	for i, v := range g {
		sum[i] = v + res[i]
	}
	start := len(dst)
	dst = f.codec.Append(dst, sum)
	if err := Decode(seen, dst[start:], f.codec.Format()); err != nil {
		// Only a non-finite sum fails to decode: the receiver refuses it
		// too, so keep the residual as it was rather than poison it.
		return dst
	}
	for i := range sum {
		res[i] = sum[i] - seen[i]
	}
	return dst
}

// Residual returns the residual (read only), nil for a lossless codec.
func (f *Feedback) Residual() []float32 { return f.residual }

// Reset forgets the residual: the weights were replaced, and what was not
// sent belongs to the old ones.
func (f *Feedback) Reset() { clear(f.residual) }

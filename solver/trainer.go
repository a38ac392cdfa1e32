package solver

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// Samples is what evaluation reads; data.Dataset satisfies it.
type Samples interface {
	Len() int
	Get(i int, dst []float32) int32
}

// ErrNonFinite is returned when a loss or gradient is NaN or infinite.
var ErrNonFinite = fmt.Errorf("solver: non-finite value")

// Trainer runs training steps of a classification network: the split between
// Gradient (forward and backward) and Apply (the optimizer step) is the seam
// cooperative training uses, with the merged gradient replacing the local one
// between the two.
type Trainer struct {
	Net   *Net
	Loss  *SoftmaxCrossEntropy
	Opt   Optimizer // nil for inference only
	Sched Schedule
	Iter  int // optimizer steps taken; the schedule's input

	// The uploaded batch: views of xvN[i] samples of allocations of capN
	// samples. On a backend whose uploads overlap the kernels
	// (gpu.OverlapsUploads), successive uploads alternate between two
	// allocations: the upload for a step writes the one the step before
	// last read, whose kernels the last step's loss read has seen finish,
	// so it runs while the last step's backward pass is still on the
	// device. Elsewhere only x[0] is used.
	x    [2]gpu.Buffer
	capN [2]int
	xv   [2]gpu.Buffer
	xvN  [2]int
	curX int // the slot of the last upload

	ranges []Range // Net's trainable ranges, refilled by every Apply without allocating
}

// NewTrainer returns a trainer; opt and sched may be nil for evaluation only.
func NewTrainer(net *Net, opt Optimizer, sched Schedule) *Trainer {
	return &Trainer{Net: net, Loss: NewSoftmaxCrossEntropy(net.Out.Size()), Opt: opt, Sched: sched}
}

// upload puts n samples of x on the backend and returns the view.
func (t *Trainer) upload(x []float32, n int) gpu.Buffer {
	size := t.Net.In.Size()
	if len(x) != n*size {
		panic(fmt.Sprintf("solver: batch of %d values for %d samples of %v", len(x), n, t.Net.In))
	}
	i := 0
	if gpu.OverlapsUploads(t.Net.B) {
		i = 1 - t.curX
	}
	t.curX = i
	if n > t.capN[i] {
		t.capN[i] = n
		t.x[i] = t.Net.B.Alloc(n * size)
		t.xvN[i] = 0
	}
	if n != t.xvN[i] {
		t.xvN[i] = n
		t.xv[i] = t.Net.B.View(t.x[i], 0, n*size)
	}
	t.Net.B.Upload(t.xv[i], x)
	return t.xv[i]
}

// Gradient runs forward and backward on one batch in training mode and
// leaves the mean loss's gradient in Net.Grads. It returns the mean loss.
// It panics on a backend with half storage (gpu.StoresHalf), which is for
// inference: weights rounded to half lose most optimizer steps.
func (t *Trainer) Gradient(x []float32, labels []int32) float64 {
	return t.GradientIDs(x, labels, nil)
}

// GradientIDs is Gradient of a batch whose samples ids names (one each,
// the same identity for the same values: an index into a data set that
// does not augment), or nil: with a prefix cache (Net.SetPrefixCache), a
// batch whose samples are all cached skips the static prefix and x is not
// even uploaded, and another keeps its samples' prefix outputs.
func (t *Trainer) GradientIDs(x []float32, labels []int32, ids []int64) float64 {
	if gpu.StoresHalf(t.Net.B) {
		panic("solver: training on a backend with fp16 storage, which is for inference only (open the device without it)")
	}
	if ids != nil && len(ids) != len(labels) {
		panic(fmt.Sprintf("solver: %d sample identities for %d labels", len(ids), len(labels)))
	}
	logits, ok := t.Net.cachedForward(ids)
	if !ok {
		gpu.MarkSection(t.Net.B, "input")
		xb := t.upload(x, len(labels))
		if ids != nil {
			logits = t.Net.forwardStore(xb, ids)
		} else {
			logits = t.Net.Forward(xb, len(labels), true)
		}
	}
	gpu.MarkSection(t.Net.B, "loss")
	loss := t.Loss.Forward(t.Net.B, logits, labels)
	t.Net.Backward(t.Loss.Backward(t.Net.B))
	return loss
}

// LR is the learning rate of the next Apply.
func (t *Trainer) LR() float32 {
	if t.Sched == nil {
		return 0
	}
	return t.Sched.LR(t.Iter)
}

// Apply takes one optimizer step with the gradient in Net.Grads.
func (t *Trainer) Apply() {
	// The ranges are recomputed every step (a layer may be frozen between
	// steps) into the same slice, so a steady-state step allocates nothing.
	t.ranges = t.Net.appendTrainable(t.ranges[:0])
	gpu.MarkSection(t.Net.B, "optimizer")
	t.Opt.Step(t.Net.Params, t.Net.Grads, t.ranges, t.LR())
	t.Iter++
}

// Step is Gradient then Apply. A non-finite loss is returned as an error and
// the step is not applied, so the weights are never corrupted.
func (t *Trainer) Step(x []float32, labels []int32) (float64, error) {
	return t.StepIDs(x, labels, nil)
}

// StepIDs is Step through GradientIDs: ids names the batch's samples, for
// the prefix cache, or is nil.
func (t *Trainer) StepIDs(x []float32, labels []int32, ids []int64) (float64, error) {
	loss := t.GradientIDs(x, labels, ids)
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("%w: loss %v at iteration %d", ErrNonFinite, loss, t.Iter)
	}
	t.Apply()
	return loss, nil
}

// Logits runs the network in evaluation mode on n samples and returns the
// logits (n×classes), valid until the next call.
func (t *Trainer) Logits(x []float32, n int) gpu.Buffer {
	return t.Net.Forward(t.upload(x, n), n, false)
}

// Evaluate returns the accuracy (0–1) and mean loss of the network on s in
// evaluation mode, batch samples at a time.
func (t *Trainer) Evaluate(s Samples, batch int) (acc, loss float64) {
	n := s.Len()
	if n == 0 {
		return 0, 0
	}
	size, classes := t.Net.In.Size(), t.Net.Out.Size()
	x := make([]float32, batch*size)
	labels := make([]int32, batch)
	probs := make([]float32, batch*classes)
	correct := 0
	for at := 0; at < n; at += batch {
		m := min(batch, n-at)
		for i := 0; i < m; i++ {
			labels[i] = s.Get(at+i, x[i*size:(i+1)*size])
		}
		logits := t.Logits(x[:m*size], m)
		loss += float64(t.Loss.Forward(t.Net.B, logits, labels[:m]) * float64(m))
		t.Net.B.Download(probs[:m*classes], t.Loss.Probs())
		for i := 0; i < m; i++ {
			if argmax(probs[i*classes:(i+1)*classes]) == int(labels[i]) {
				correct++
			}
		}
	}
	return float64(correct) / float64(n), loss / float64(n)
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

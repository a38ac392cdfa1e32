package worker

import (
	"errors"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
)

// The driver's compute goroutine (Driver.Run): one forward and backward
// pass per ComputeRequest. With the session's layer-wise overlap (more
// than one part) the pass hooks the net's backward (solver.Net.OnGradsDone)
// and, as each part's layers finish, downloads that part and hands it to
// Run's goroutine, which gives it to the core (Core.PartDone) and sends the
// Push while the layers below are still computing. The hand-over is a
// buffered channel with room for every part and the end of the pass, so
// the backward pass never waits for the network: Run's goroutine is the
// sender, and a slow link holds it, not the computation.

// computed is what the compute goroutine reports: a part of the gradient
// the backward pass finished (isPart), then the end of the pass (done or
// err), always last.
type computed struct {
	isPart bool
	part   PartDone
	done   ComputeDone
	err    error
	start  time.Time // when the pass began
	end    time.Time // when it ended (Slowdown included)
}

// pass runs the passes of one Driver. Its fields belong to the compute
// goroutine while a pass runs, and to Run's goroutine otherwise; the
// vectors handed out in PartDone are read by the core before the pass's
// end is reported, so the next pass may overwrite them.
type pass struct {
	hook func(off int) // gradsDone, bound once: setting it allocates nothing

	net    *solver.Net  // the net the buffers below were made for
	grad   []float32    // the parts of Net.Grads downloaded so far
	state  []float32    // Net.State after the forward pass
	views  []gpu.Buffer // views of Net.Grads, one per part
	bounds []int        // part j is [bounds[j], bounds[j+1])
	x      gpu.Buffer   // the uploaded batch (capacity xcap samples)
	xcap   int

	// The pass in flight.
	it        uint64
	samples   int
	loss      float64
	next      int // parts next.. have been handed out
	stateDone bool
	start     time.Time
	mark      time.Time // the Slowdown's sleeps so far are in up to here
	slowdown  float64
	out       chan<- computed
}

// setup points the pass's buffers at tr's net and the request's parts.
func (p *pass) setup(tr *solver.Trainer, parts []int) {
	net := tr.Net
	n := net.NumParams()
	same := p.net == net && len(p.bounds) == len(parts)+1
	for j := range parts {
		same = same && p.bounds[j] == parts[j]
	}
	if same {
		return
	}
	if p.hook == nil {
		p.hook = p.gradsDone
	}
	p.net = net
	p.bounds = append(append(p.bounds[:0], parts...), n)
	p.grad = make([]float32, n)
	p.state = make([]float32, net.State.Len())
	p.views = p.views[:0]
	for j := range parts {
		p.views = append(p.views, net.B.View(net.Grads, p.bounds[j], p.bounds[j+1]-p.bounds[j]))
	}
	p.x, p.xcap = nil, 0
}

// run computes req on tr with the next batch of data and reports to out,
// which must have room for len(req.Parts)+1 values.
func (p *pass) run(tr *solver.Trainer, req ComputeRequest, data Batches, x []float32, labels []int32,
	slowdown float64, out chan<- computed) {
	p.start, p.mark, p.slowdown, p.out = time.Now(), time.Now(), slowdown, out
	data.SetBatch(req.Batch)
	n, _ := data.Next(x, labels)
	if n == 0 {
		out <- computed{err: errors.New("worker: the data source gave no samples"), start: p.start, end: time.Now()}
		return
	}
	size := tr.Net.In.Size()
	var loss float64
	if len(req.Parts) < 2 {
		loss = tr.Gradient(x[:n*size], labels[:n])
	} else {
		p.setup(tr, req.Parts)
		p.it, p.samples, p.next, p.stateDone = req.Iteration, n, len(req.Parts), false
		loss = p.gradient(tr, x[:n*size], labels[:n])
	}
	p.slow()
	out <- computed{done: ComputeDone{Iteration: req.Iteration, Samples: n, Loss: loss,
		ComputeNanos: time.Since(p.start).Nanoseconds()}, start: p.start, end: time.Now()}
}

// gradient is Trainer.Gradient with the backward pass hooked: the same
// calls in the same order on the same values, so the same bits (the
// worker's tests hold the two together).
func (p *pass) gradient(tr *solver.Trainer, x []float32, labels []int32) float64 {
	net, b, n := tr.Net, tr.Net.B, len(labels)
	if n > p.xcap {
		p.x, p.xcap = b.Alloc(n*net.In.Size()), n
	}
	xb := p.x
	if n < p.xcap {
		xb = b.View(p.x, 0, len(x))
	}
	b.Upload(xb, x)
	logits := net.Forward(xb, n, true)
	p.loss = tr.Loss.Forward(b, logits, labels)
	net.OnGradsDone = p.hook
	net.Backward(tr.Loss.Backward(b))
	net.OnGradsDone = nil
	return p.loss
}

// gradsDone is the net's hook: Grads[off:] is final, so every part that
// starts at or after off is handed out, last first.
func (p *pass) gradsDone(off int) {
	p.slow()
	if p.next == 0 || p.bounds[p.next-1] < off {
		return
	}
	b := p.net.B
	if !p.stateDone && len(p.state) > 0 {
		// The batch-norm statistics the forward pass moved go with the
		// first part (Core.PartDone).
		b.Download(p.state, p.net.State)
		p.stateDone = true
	}
	for p.next > 0 && p.bounds[p.next-1] >= off {
		p.next--
		j := p.next
		g := p.grad[p.bounds[j]:p.bounds[j+1]]
		b.Download(g, p.views[j])
		p.out <- computed{isPart: true, part: PartDone{Iteration: p.it, Part: j, Samples: p.samples,
			Loss: p.loss, ComputeNanos: time.Since(p.start).Nanoseconds(), Grad: g, State: p.state}}
	}
}

// slow plays a slower device (Driver.Slowdown): the time computed since
// the last mark is stretched by sleeping, so that every stretch of the pass,
// and so every part's readiness, is as much later as the whole.
func (p *pass) slow() {
	if p.slowdown > 1 {
		time.Sleep(time.Duration(float64(time.Since(p.mark)) * (p.slowdown - 1)))
	}
	p.mark = time.Now()
}

// PassTiming is how one compute's pushes went out against its pass
// (Driver.OnPass); durations count from the pass's start.
type PassTiming struct {
	Iteration uint64
	// Start is when the pass began, by the wall clock.
	Start time.Time
	// Pass is when the pass ended: data, forward and backward (and the
	// Slowdown's sleeps).
	Pass time.Duration
	// Sends are the pass's Pushes in the order sent: when Conn.Send began
	// and returned (on a link slower than the sender, about when the last
	// byte left).
	Sends []SendTiming
}

// SendTiming is one Push's Send.
type SendTiming struct {
	Part       int
	Start, End time.Duration
}

// Overlap returns how long the Pushes' sends took in all (total) and how
// much of that fell inside the pass (hidden), and how long after the pass
// the last send returned (after, 0 if it returned before): the
// communication the overlap did not hide.
func (t PassTiming) Overlap() (hidden, total, after time.Duration) {
	for _, s := range t.Sends {
		total += s.End - s.Start
		hidden += max(0, min(s.End, t.Pass)-s.Start)
		after = max(after, s.End-t.Pass)
	}
	return hidden, total, after
}

// timing collects a PassTiming on Run's goroutine.
type timing struct {
	cur   PassTiming
	start time.Time
	sends []sendAt // absolute, until the pass's start is known
	ended bool
}

type sendAt struct {
	part       int
	start, end time.Time
}

func (t *timing) sent(part int, start time.Time) {
	t.sends = append(t.sends, sendAt{part, start, time.Now()})
}

// flush hands the timing of an ended pass to f once its pushes are sent.
func (t *timing) flush(f func(PassTiming)) {
	if !t.ended {
		return
	}
	t.cur.Start, t.cur.Sends = t.start, nil
	for _, s := range t.sends {
		t.cur.Sends = append(t.cur.Sends, SendTiming{Part: s.part, Start: s.start.Sub(t.start), End: s.end.Sub(t.start)})
	}
	f(t.cur)
	t.sends, t.ended = t.sends[:0], false
}

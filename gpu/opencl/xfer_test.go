//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// The transfer queue's rules (xfer.go), checked on PoCL, whose
// queues run their commands on threads of their own: an upload that jumped
// ahead of queued kernels would be seen by them, or overwritten by them.
// Every value is a small integer, exact in half storage, so every result is
// checked bit for bit. Each case also checks which queue the uploads took,
// so a change that sent everything back to the compute queue (always
// correct, never overlapping) fails too.

// xferCase is one ordering scenario: run does the work and returns the
// bytes it expects on the transfer queue.
type xferCase struct {
	name string
	run  func(t *testing.T, o *OpenCL, n int) (wantXfer int64)
}

// xferN is the buffers' length: large enough that the queued kernels take
// milliseconds on PoCL, so an upload that does not wait for them lands
// while they run.
const xferN = 1 << 18

// queuedKernels is how many kernels the cases queue before an upload.
const queuedKernels = 40

func TestOpenCLTransferQueue(t *testing.T) {
	for _, staged := range []bool{false, true} {
		t.Run(fmt.Sprintf("staged=%v", staged), func(t *testing.T) {
			bothStorages(t, func(t *testing.T, o *OpenCL) {
				if o.ctx.xfer == nil {
					t.Skip("the driver refused a second queue")
				}
				if staged {
					withStaging(t, o, 4096, 3*4096+4, 2) // chunks that split a float
				}
				for _, c := range xferCases {
					t.Run(c.name, func(t *testing.T) {
						syncPoint(o)
						x0 := o.ctx.xferUp
						want := c.run(t, o, xferN)
						if got := o.ctx.xferUp - x0; got != want {
							t.Errorf("%d bytes went on the transfer queue, want %d", got, want)
						}
					})
				}
			})
		})
	}
}

// TestOpenCLOneQueue runs the same cases on a backend opened with
// Config.OneQueue: the same results, nothing on the transfer queue.
func TestOpenCLOneQueue(t *testing.T) {
	o := openCLWith(t, openCLForTest(t), func(cfg *Config, _ *knobs) { cfg.OneQueue = true })
	if gpu.OverlapsUploads(o) {
		t.Error("OverlapsUploads with one queue")
	}
	for _, c := range xferCases {
		t.Run(c.name, func(t *testing.T) {
			syncPoint(o)
			x0 := o.ctx.xferUp
			c.run(t, o, xferN)
			if o.ctx.xferUp != x0 {
				t.Errorf("%d bytes went on the transfer queue with none", o.ctx.xferUp-x0)
			}
		})
	}
}

// syncPoint downloads a fresh buffer: every command before it is done,
// half storage's stage included (its Download converts through it). The
// cases count on it, since they share one backend.
func syncPoint(o *OpenCL) { download(o, o.Alloc(1)) }

// filled returns n values v.
func filled(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// ramp returns n small integers starting at first (exact in half).
func ramp(n, first int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(first + i%61)
	}
	return out
}

// mustBits fails unless got and want hold the same bits.
func mustBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, got[i], want[i])
		}
	}
}

// up is the bytes an upload of n values puts on a queue: half storage
// uploads floats into its stage, which the device then converts.
func up(n int) int64 { return int64(4 * n) }

// In half storage, what crosses is the float stage, and the buffer is
// written by the conversion kernel on the compute queue, in order: the
// stage goes on the transfer queue whenever a Download (which converts
// through it, then reads it) came after the last conversion. The cases'
// counts for half storage follow from that.

var xferCases = []xferCase{
	{"read-while-queued", func(t *testing.T, o *OpenCL, n int) int64 {
		// Kernels that read a are queued, then a is overwritten: they must
		// see the old values, the kernel after the upload the new ones.
		a, b := o.Alloc(n), o.Alloc(n)
		o.Upload(a, filled(n, 1))
		download(o, b) // a sync point: a is idle from here
		for range queuedKernels {
			o.Axpy(1, a, b)
		}
		o.Upload(a, ramp(n, 2)) // a is used by queued kernels: compute queue
		o.Axpy(1, a, b)
		want := ramp(n, 2+queuedKernels)
		mustBits(t, "b", download(o, b), want)
		if o.half {
			return 2 * up(n)
		}
		return 0 // a was filled after the last sync, then read by the queued kernels
	}},
	{"write-while-queued", func(t *testing.T, o *OpenCL, n int) int64 {
		// Kernels that write a are queued, then a is overwritten: the
		// upload must land after them.
		a, ones := o.Alloc(n), o.Alloc(n)
		o.Fill(ones, 1)
		download(o, a)
		for range queuedKernels {
			o.Axpy(1, ones, a)
		}
		data := ramp(n, 3)
		o.Upload(a, data)
		mustBits(t, "a", download(o, a), data)
		if o.half {
			return up(n)
		}
		return 0
	}},
	{"idle-after-sync", func(t *testing.T, o *OpenCL, n int) int64 {
		// a was last used before a Download: the upload goes on the
		// transfer queue while kernels on other buffers run, and the
		// kernels after it, and a Download, see it.
		a, b, c, ones := o.Alloc(n), o.Alloc(n), o.Alloc(n), o.Alloc(n)
		o.Fill(ones, 1)
		o.Axpy(1, ones, a)
		download(o, c)
		for range queuedKernels {
			o.Axpy(1, ones, b)
		}
		data := ramp(n, 4)
		o.Upload(a, data)
		mustBits(t, "a", download(o, a), data)
		o.Axpy(1, a, c)
		mustBits(t, "c", download(o, c), data)
		mustBits(t, "b", download(o, b), filled(n, queuedKernels))
		return up(n)
	}},
	{"alternating", func(t *testing.T, o *OpenCL, n int) int64 {
		// A training loop's shape: each step uploads its batch into one
		// of two buffers, runs a "forward" that reads it, reads a "loss"
		// back, then a "backward" that reads the batch again, left
		// running. From the third step on, the buffer uploaded into was
		// read by the step before last, whose kernels came before the last
		// step's loss read: the transfer queue. (So in the second step:
		// its buffer's last use was the fill of Alloc. The weights' upload
		// follows their Alloc's fill: compute queue.)
		var x [2]gpu.Buffer
		for i := range x {
			x[i] = o.Alloc(n)
		}
		w, out, acc := o.Alloc(n), o.Alloc(n), o.Alloc(n)
		o.Upload(w, filled(n, 2))
		const steps = 6
		sum := make([]float32, n)
		loss := make([]float32, 16)
		for s := range steps {
			data := ramp(n, s)
			xb := x[s%2]
			o.Upload(xb, data)
			o.Mul(out, xb, w)
			o.Download(loss, o.View(out, n-16, 16))
			for i := range 16 {
				if want := 2 * data[n-16+i]; loss[i] != want {
					t.Fatalf("step %d: out[%d] = %g, want %g", s, n-16+i, loss[i], want)
				}
			}
			for range queuedKernels / 4 {
				o.Axpy(1, xb, acc)
				o.Axpy(-1, xb, acc)
			}
			o.Axpy(1, xb, acc)
			for i := range sum {
				sum[i] += data[i]
			}
		}
		mustBits(t, "acc", download(o, acc), sum)
		if o.half {
			// The weights (after syncPoint) and every step but the first
			// (its stage was converted from for the weights).
			return steps * up(n)
		}
		return (steps - 1) * up(n)
	}},
	{"views", func(t *testing.T, o *OpenCL, n int) int64 {
		// Two views of one allocation: kernels that read the first are
		// queued, then the second is written. The allocation is the
		// unit, so the upload waits for them (compute queue); after a
		// sync, an upload into the second view goes on the transfer
		// queue, and a kernel reading both sees both.
		m := o.Alloc(2 * n)
		v1, v2 := o.View(m, 0, n), o.View(m, n, n)
		b := o.Alloc(n)
		o.Upload(v1, filled(n, 1))
		download(o, b)
		for range queuedKernels {
			o.Axpy(1, v1, b)
		}
		d2 := ramp(n, 5)
		o.Upload(v2, d2)
		all := download(o, m)
		mustBits(t, "first view", all[:n], filled(n, 1))
		mustBits(t, "second view", all[n:], d2)
		mustBits(t, "b", download(o, b), filled(n, queuedKernels))
		d2 = ramp(n, 6)
		o.Upload(v2, d2) // after the Download of m: transfer queue
		o.Axpy(1, v2, v1)
		want := ramp(n, 7)
		mustBits(t, "first view after", download(o, v1), want)
		if o.half {
			return 3 * up(n) // each upload follows a Download
		}
		return up(n)
	}},
}

package worker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// throttled paces its writes at rate bytes a second (a slow uplink): each
// write returns once the link would have carried its bytes.
type throttled struct {
	net.Conn
	rate float64
	due  time.Time
}

func (c *throttled) Write(p []byte) (int, error) {
	const chunk = 16 << 10
	n := 0
	for len(p) > 0 {
		k := min(len(p), chunk)
		w, err := c.Conn.Write(p[:k])
		n += w
		if err != nil {
			return n, err
		}
		// A sleep that overshoots is made up by the next ones; only a link
		// left idle starts afresh.
		if now := time.Now(); c.due.Before(now.Add(-5 * time.Millisecond)) {
			c.due = now
		}
		c.due = c.due.Add(time.Duration(float64(k) / c.rate * float64(time.Second)))
		time.Sleep(time.Until(c.due))
		p = p[k:]
	}
	return n, nil
}

// BenchmarkOverlapThrottled plays one worker that computes lenet-caffe's
// batches of 64 at about the Nexus 6P's pace (0.5 s a pass, the paper:
// this CPU's pass stretched by Driver.Slowdown, layer by layer, so the
// layers keep this CPU's proportions) and pushes over a 32 Mbit/s uplink
// to a hub that answers at once, with and without layer-wise overlap. It
// reports the medians over the iterations of: the pass (pass-ms), the
// pushes' send time (send-ms), the share of it inside the pass (hidden-%),
// and how long after the pass the last push was out (after-ms): the
// communication the overlap did not hide. On a shared CPU the stretch
// multiplies every stall of the pass too: hence medians.
//
//	go test ./worker -run '^$' -bench OverlapThrottled -benchtime 10x
func BenchmarkOverlapThrottled(b *testing.B) {
	const (
		model = "lenet-caffe"
		batch = 64
		phone = 500 * time.Millisecond // a pass on the Nexus 6P (the paper)
		wifi  = 32e6 / 8               // bytes a second
	)
	f := newFakeHubModel(b, model)
	// This CPU's pass, the best of 5, sets the stretch.
	data := &randBatches{r: rand.New(rand.NewPCG(9, 9))}
	data.SetBatch(batch)
	x, labels := make([]float32, batch*28*28), make([]int32, batch)
	data.Next(x, labels)
	own := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		f.tr.Gradient(x, labels)
		own = min(own, time.Since(start))
	}
	slowdown := max(1, float64(phone)/float64(own))
	for _, codec := range []string{"none", "int8"} {
		for _, overlap := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/overlap=%v", codec, overlap), func(b *testing.B) {
				parts := []int{0}
				if overlap {
					parts = f.layerParts()
				}
				benchOverlap(b, f, codec, parts, slowdown, wifi, batch)
			})
		}
	}
}

func benchOverlap(b *testing.B, f *fakeHub, codec string, parts []int, slowdown, rate float64, batch int) {
	wEnd, hEnd := net.Pipe()
	wc := transport.NewStreamConn(&throttled{Conn: wEnd, rate: rate}, "hub", 64<<20)
	hc := transport.NewStreamConn(hEnd, "worker", 64<<20)
	defer hc.Close()
	core, err := NewCore(DefaultConfig(), cpu.NewCPU())
	if err != nil {
		b.Fatal(err)
	}
	passes := make(chan PassTiming, b.N+1)
	d := &Driver{Core: core, Conn: wc, Data: &randBatches{r: rand.New(rand.NewPCG(1, 1))}, Slowdown: slowdown,
		OnPass: func(p PassTiming) { passes <- p }}
	done := make(chan error, 1)
	ctx := context.Background()
	go func() { done <- d.Run(ctx) }()
	recvKind := func(want wire.Kind) wire.Message {
		m, err := hc.Recv(ctx)
		if err != nil || m.Kind() != want {
			b.Fatalf("hub received %v (%v), want %s", m, err, want)
		}
		return m
	}
	recvKind(wire.KindRegister)
	w := f.welcome(batch)
	w.Session.Compression, w.Session.Parts = codec, parts
	if err := hc.Send(ctx, w); err != nil {
		b.Fatal(err)
	}
	c, err := compress.Parse(codec)
	if err != nil {
		b.Fatal(err)
	}
	bounds := append(append([]int(nil), parts...), f.n)
	b.ResetTimer()
	for it := range b.N {
		for range parts {
			recvKind(wire.KindPush)
		}
		// A zero update, part by part (the weights need not move).
		for j := len(parts) - 1; j >= 0; j-- {
			m := &wire.Merged{Header: wire.Header{Iteration: uint64(it)}, Part: j, Partial: j > 0}
			zero := make([]float32, bounds[j+1]-bounds[j])
			if c.Lossless() {
				m.Gradient = zero
			} else {
				m.Enc = c.Append(nil, zero)
			}
			if j == 0 {
				m.BatchSizes = wire.BatchSizes{"w0": batch}
				if it == b.N-1 {
					m.BatchSizes = nil
				}
			}
			if err := hc.Send(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	hc.Send(ctx, &wire.Goodbye{Reason: "done"})
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	var pass, send, hidden, after []float64
	for range b.N {
		p := <-passes
		h, t, a := p.Overlap()
		pass, send = append(pass, float64(p.Pass)/1e6), append(send, float64(t)/1e6)
		hidden, after = append(hidden, 100*float64(h)/float64(t)), append(after, float64(a)/1e6)
	}
	b.ReportMetric(median(pass), "pass-ms")
	b.ReportMetric(median(send), "send-ms")
	b.ReportMetric(median(hidden), "hidden-%")
	b.ReportMetric(median(after), "after-ms")
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// BenchmarkPass: the compute goroutine's pass on lenet-caffe, 64 samples,
// as one part (Trainer.Gradient) and with one part per layer (the hooked
// backward, each part downloaded as it is final): the overlap's cost on
// the pass itself.
//
//	go test ./worker -run '^$' -bench 'Pass$' -benchtime 20x
func BenchmarkPass(b *testing.B) {
	f := newFakeHubModel(b, "lenet-caffe")
	core, err := NewCore(DefaultConfig(), cpu.NewCPU())
	if err != nil {
		b.Fatal(err)
	}
	take(core)
	w := f.welcome(64)
	w.Session.Parts = f.layerParts()
	if err := core.Step("hub", w); err != nil {
		b.Fatal(err)
	}
	take(core)
	x, labels := make([]float32, 64*28*28), make([]int32, 64)
	data := &randBatches{r: rand.New(rand.NewPCG(1, 1))}
	for _, parts := range [][]int{{0}, f.layerParts()} {
		b.Run(fmt.Sprintf("parts=%d", len(parts)), func(b *testing.B) {
			var p pass
			out := make(chan computed, len(parts)+1)
			req := ComputeRequest{Batch: 64, Parts: parts}
			for b.Loop() {
				p.run(core.Trainer(), req, data, x, labels, 1, out)
				for r := range out {
					if !r.isPart {
						break
					}
				}
			}
		})
	}
}

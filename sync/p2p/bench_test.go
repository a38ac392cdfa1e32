package p2p

import (
	"context"
	"testing"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
)

// BenchmarkRoundTrip measures one training step's traffic between a worker
// and a hub on loopback: a Push of a lenet5 gradient (61,706 floats, 247 kB
// on the wire) one way and a Merged of the same size back, each sent,
// framed, encrypted, received and decoded. It reports round trips per
// second and the payload throughput (both directions counted).
func BenchmarkRoundTrip(b *testing.B) {
	const n = 61706
	for _, tc := range []struct{ name, transport string }{
		{"tcp", "/tcp/"},
		{"quic", "/quic-v1/"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hub, worker := newTestHost(b, HostConfig{}), newTestHost(b, HostConfig{})
			l := hub.Listen()
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			wc, err := worker.Dial(ctx, addrWith(b, hub, tc.transport))
			if err != nil {
				b.Fatal(err)
			}
			defer wc.Close()
			hc, err := l.Accept(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer hc.Close()

			// The hub echoes each Push as a Merged, as the barrier would
			// with one worker.
			echo := make(chan error, 1)
			go func() {
				merged := &wire.Merged{Header: wire.Header{Sender: "hub"}, Gradient: make(wire.Floats, n), LR: 0.01}
				for {
					m, err := hc.Recv(ctx)
					if err != nil {
						echo <- err
						return
					}
					merged.Iteration = m.Head().Iteration
					copy(merged.Gradient, m.(*wire.Push).Gradient)
					if err := hc.Send(ctx, merged); err != nil {
						echo <- err
						return
					}
				}
			}()
			push := &wire.Push{Header: wire.Header{Sender: "w"}, Samples: 64, Gradient: randomFloats(3, n)}
			b.SetBytes(2 * 4 * n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				push.Iteration = uint64(i)
				if err := wc.Send(ctx, push); err != nil {
					b.Fatal(err)
				}
				m, err := wc.Recv(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if m.Head().Iteration != uint64(i) {
					b.Fatalf("merged for iteration %d, want %d", m.Head().Iteration, i)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
			wc.Close()
			<-echo
		})
	}
}

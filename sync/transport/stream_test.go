package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
)

// resettable wraps a stream with a Reset that counts its calls, like a
// libp2p stream's.
type resettable struct {
	net.Conn
	resets atomic.Int32
}

func (r *resettable) Reset() error {
	r.resets.Add(1)
	return r.Close()
}

// streamPair returns two Conns framing over the ends of a net.Pipe.
func streamPair(t *testing.T, maxFrame int) (a, b Conn) {
	t.Helper()
	x, y := net.Pipe()
	a, b = NewStreamConn(x, "peer-b", maxFrame), NewStreamConn(y, "peer-a", maxFrame)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestStreamRoundTrip(t *testing.T) {
	a, b := streamPair(t, 1<<20)
	if a.RemotePeer() != "peer-b" || b.RemotePeer() != "peer-a" {
		t.Errorf("peers %q and %q", a.RemotePeer(), b.RemotePeer())
	}
	// exchange sends and receives in turn; net.Pipe is synchronous, so
	// this also checks that the read-ahead keeps a lone Send from blocking.
	exchange(t, a, b)
}

// TestStreamPeerCloses: what the peer sent before closing is delivered,
// then io.EOF; Send then fails.
func TestStreamPeerCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := streamPair(t, 1<<20)
		ctx := context.Background()
		sent := make(chan error, 1)
		go func() {
			var err error
			for i := range 3 {
				err = errors.Join(err, a.Send(ctx, &wire.Push{Samples: i}))
			}
			sent <- errors.Join(err, a.Close())
		}()
		for i := range 3 {
			m, err := b.Recv(ctx)
			if err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if got := m.(*wire.Push).Samples; got != i {
				t.Errorf("message %d has samples %d", i, got)
			}
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if _, err := b.Recv(ctx); err != io.EOF {
			t.Errorf("Recv after the peer closed: %v, want io.EOF", err)
		}
		if err := b.Send(ctx, &wire.Push{}); err == nil {
			t.Errorf("Send to a closed peer succeeded")
		}
	})
}

func TestStreamClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := streamPair(t, 1<<20)
		ctx := context.Background()
		got := make(chan error, 1)
		go func() { _, err := a.Recv(ctx); got <- err }()
		synctest.Wait()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if err := <-got; !errors.Is(err, ErrClosed) {
			t.Errorf("Recv blocked during Close: %v, want ErrClosed", err)
		}
		if _, err := a.Recv(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("Recv after Close: %v, want ErrClosed", err)
		}
		if err := a.Send(ctx, &wire.Push{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Send after Close: %v, want ErrClosed", err)
		}
	})
}

// TestStreamBadFrames: a bad frame from the peer is reported with the wire
// error, and the stream is reset.
func TestStreamBadFrames(t *testing.T) {
	junk := binary.BigEndian.AppendUint32(nil, 3)
	junk = append(junk, 0x93, byte(wire.ProtocolVersion), 2)
	tests := []struct {
		name string
		raw  []byte
		want error
	}{
		{"over the cap", binary.BigEndian.AppendUint32(nil, 1<<20), wire.ErrTooLarge},
		{"malformed", junk, wire.ErrMalformed},
		{"newer version", append(binary.BigEndian.AppendUint32(nil, 6), 0x95, 9, 3, 0, 0xa0, 0x80), wire.ErrVersion},
		{"truncated", append(binary.BigEndian.AppendUint32(nil, 100), 1, 2, 3), wire.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				x, y := net.Pipe()
				rs := &resettable{Conn: y}
				c := NewStreamConn(rs, "bad", 1000)
				defer c.Close()
				go func() {
					x.Write(tt.raw)
					x.Close() // ends a truncated frame
				}()
				_, err := c.Recv(context.Background())
				if !errors.Is(err, tt.want) {
					t.Errorf("Recv: %v, want %v", err, tt.want)
				}
				if rs.resets.Load() != 1 {
					t.Errorf("the stream was reset %d times, want once", rs.resets.Load())
				}
			})
		})
	}
}

// TestStreamRecvTimeout: a Recv that times out leaves the connection
// usable (the read-ahead goroutine keeps the frame boundary).
func TestStreamRecvTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := streamPair(t, 1<<20)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := b.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Recv: %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("Recv gave up after %v, want 2s", waited)
		}
		exchange(t, a, b)
	})
}

// TestStreamSendCancelled: a Send blocked because the peer does not read
// is ended by its context, which closes the connection; the peer receives
// what was sent whole before, then io.EOF, never half a frame.
func TestStreamSendCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := streamPair(t, 1<<20)
		ctx := context.Background()
		// b's reader takes one message into its queue and blocks handing
		// over the second; the third Send then blocks in the pipe.
		for i := range 2 {
			if err := a.Send(ctx, &wire.Push{Samples: i}); err != nil {
				t.Fatal(err)
			}
		}
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := a.Send(tctx, &wire.Push{Samples: 2, Gradient: make(wire.Floats, 1000)}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("blocked Send: %v, want DeadlineExceeded", err)
		}
		if err := a.Send(ctx, &wire.Push{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Send after a cancelled Send: %v, want ErrClosed", err)
		}
		for i := range 2 {
			if _, err := b.Recv(ctx); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
		}
		if _, err := b.Recv(ctx); err != io.EOF {
			t.Errorf("Recv after the cancelled Send: %v, want io.EOF", err)
		}
	})
}

// TestStreamCancelledBeforeSend: a context already done writes nothing
// and leaves the connection usable.
func TestStreamCancelledBeforeSend(t *testing.T) {
	a, b := streamPair(t, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Send(ctx, &wire.Push{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Send: %v, want Canceled", err)
	}
	if _, err := a.Recv(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Recv: %v, want Canceled", err)
	}
	exchange(t, a, b)
}

// TestStreamRecvSpan: RecvSpan is the time from a frame's first byte to its
// last; idle time before the frame is not counted, and a frame that
// arrives in one write spans nothing. Virtual time (synctest) makes the
// figures exact.
func TestStreamRecvSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x, y := net.Pipe()
		c := NewStreamConn(y, "w", 1<<20)
		defer c.Close()
		defer x.Close()
		var frame []byte
		frame, err := wire.NewWriter(io.Discard).AppendFrame(frame, &wire.Push{Samples: 1, Gradient: make(wire.Floats, 1000)})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Second) // idle: not part of the span
			x.Write(frame[:100])
			time.Sleep(300 * time.Millisecond)
			x.Write(frame[100:])
			time.Sleep(time.Second)
			x.Write(frame)
		}()
		for i, want := range []time.Duration{300 * time.Millisecond, 0} {
			m, err := c.Recv(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := m.(*wire.Push); !ok || len(p.Gradient) != 1000 {
				t.Fatalf("message %d: %T", i, m)
			}
			if got := c.(Spanned).RecvSpan(); got != want {
				t.Errorf("message %d spans %v, want %v", i, got, want)
			}
		}
	})
}

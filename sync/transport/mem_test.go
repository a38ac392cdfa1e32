package transport

import (
	"context"
	"errors"
	"io"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/sync/wire"
)

// messages returns one message of several kinds, as they read back (with
// the protocol version set).
func messages() []wire.Message {
	h := func(iter uint64, from string) wire.Header {
		return wire.Header{Version: wire.ProtocolVersion, Iteration: iter, Sender: from}
	}
	return []wire.Message{
		&wire.Register{Header: h(0, "w1"), Device: "Pixel 7", Backend: "cpu", Speed: 120, Info: map[string]string{"token": "t"}},
		&wire.Welcome{Header: h(5, "hub"), WorkerID: "w1", Model: "lenet5", BatchSize: 32,
			ModelState: wire.ModelState{Weights: wire.Floats{1, 2, 3}, State: wire.Floats{}, Optimizer: wire.OptimizerState{Name: "sgd"}}},
		&wire.Push{Header: h(5, "w1"), Samples: 32, ComputeNanos: 5e8, Loss: 2.3, Gradient: wire.Floats{0.5, -0.25, 0}},
		&wire.Merged{Header: h(5, "hub"), Gradient: wire.Floats{0.1, 0.2, 0.3}, BatchSizes: wire.BatchSizes{"w1": 32}, LR: 0.01},
		&wire.Goodbye{Header: h(9, "hub"), Reason: "done"},
	}
}

// pair returns the two ends of a connection over a new network, the
// dialler's named "w1" and the listener's at "hub".
func pair(t *testing.T, cfg MemConfig) (client, server Conn, n *MemNetwork) {
	t.Helper()
	n, err := NewMemNetwork(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx := context.Background()
	client, err = n.Dialer("w1").Dial(ctx, "hub")
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server, n
}

// exchange sends every message from a to b, then back, checking each.
func exchange(t *testing.T, a, b Conn) {
	t.Helper()
	ctx := context.Background()
	for _, dir := range [][2]Conn{{a, b}, {b, a}} {
		for _, want := range messages() {
			if err := dir[0].Send(ctx, want); err != nil {
				t.Fatalf("Send(%s): %v", want.Kind(), err)
			}
			got, err := dir[1].Recv(ctx)
			if err != nil {
				t.Fatalf("Recv after a %s: %v", want.Kind(), err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("sent %+v\nreceived %+v", want, got)
			}
		}
	}
}

func TestMemRoundTrip(t *testing.T) {
	client, server, _ := pair(t, DefaultMemConfig())
	if client.RemotePeer() != "hub" || server.RemotePeer() != "w1" {
		t.Errorf("peers %q and %q, want hub and w1", client.RemotePeer(), server.RemotePeer())
	}
	exchange(t, client, server)
}

// TestMemSendCopies: a message changed after Send arrives as it was sent.
func TestMemSendCopies(t *testing.T) {
	client, server, _ := pair(t, DefaultMemConfig())
	m := &wire.Push{Gradient: wire.Floats{1, 2}}
	if err := client.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	m.Gradient[0] = 99
	got, err := server.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g := got.(*wire.Push).Gradient; g[0] != 1 {
		t.Errorf("received %v, want the vector as sent", g)
	}
}

func TestMemConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg MemConfig
		ok  bool
	}{
		{DefaultMemConfig(), true},
		{MemConfig{QueueLen: 1, MaxFrame: 1}, true},
		{MemConfig{QueueLen: 0, MaxFrame: 100}, false},
		{MemConfig{QueueLen: 4, MaxFrame: 0}, false},
	} {
		_, err := NewMemNetwork(tt.cfg)
		if (err == nil) != tt.ok {
			t.Errorf("NewMemNetwork(%+v) = %v, want ok %v", tt.cfg, err, tt.ok)
		}
	}
}

func TestMemAddresses(t *testing.T) {
	ctx := context.Background()
	n, err := NewMemNetwork(DefaultMemConfig())
	if err != nil {
		t.Fatal(err)
	}
	l, err := n.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	if l.Addr() != "hub" {
		t.Errorf("Addr() = %q", l.Addr())
	}
	if _, err := n.Listen("hub"); !errors.Is(err, ErrAddrInUse) {
		t.Errorf("second Listen: %v, want ErrAddrInUse", err)
	}
	if _, err := n.Dial(ctx, "nowhere"); !errors.Is(err, ErrRefused) {
		t.Errorf("Dial(nowhere): %v, want ErrRefused", err)
	}
	c1, err := n.Dial(ctx, "hub")
	if err != nil {
		t.Fatal(err)
	}
	s1, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := n.Dial(ctx, "hub") // left in the backlog
	if err != nil {
		t.Fatal(err)
	}
	if s1.RemotePeer() != "mem-1" {
		t.Errorf("anonymous dialler is %q, want mem-1", s1.RemotePeer())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := l.Accept(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Accept after Close: %v, want ErrClosed", err)
	}
	if _, err := n.Dial(ctx, "hub"); !errors.Is(err, ErrRefused) {
		t.Errorf("Dial after the listener closed: %v, want ErrRefused", err)
	}
	// The connection never accepted was closed with the listener.
	if _, err := c2.Recv(ctx); err != io.EOF {
		t.Errorf("Recv on a connection never accepted: %v, want io.EOF", err)
	}
	// The accepted one lives on.
	exchange(t, c1, s1)
	// The address is free again.
	if _, err := n.Listen("hub"); err != nil {
		t.Errorf("Listen after Close: %v", err)
	}
}

func TestMemClose(t *testing.T) {
	ctx := context.Background()
	push := &wire.Push{Samples: 1}
	t.Run("this end", func(t *testing.T) {
		client, _, _ := pair(t, DefaultMemConfig())
		if err := client.Close(); err != nil {
			t.Fatal(err)
		}
		if err := client.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if err := client.Send(ctx, push); !errors.Is(err, ErrClosed) {
			t.Errorf("Send: %v, want ErrClosed", err)
		}
		if _, err := client.Recv(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("Recv: %v, want ErrClosed", err)
		}
	})
	t.Run("peer drains then EOF", func(t *testing.T) {
		client, server, _ := pair(t, DefaultMemConfig())
		for range 3 {
			if err := client.Send(ctx, push); err != nil {
				t.Fatal(err)
			}
		}
		client.Close()
		for i := range 3 {
			if _, err := server.Recv(ctx); err != nil {
				t.Fatalf("message %d sent before Close: %v", i, err)
			}
		}
		if _, err := server.Recv(ctx); err != io.EOF {
			t.Errorf("Recv after the peer closed: %v, want io.EOF", err)
		}
		if err := server.Send(ctx, push); !errors.Is(err, ErrPeerClosed) {
			t.Errorf("Send to a closed peer: %v, want ErrPeerClosed", err)
		}
	})
}

// TestMemCloseUnblocks: Close wakes a Recv and a Send blocked on this
// connection, and the peer's Send blocked on a full queue.
func TestMemCloseUnblocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		client, server, _ := pair(t, MemConfig{QueueLen: 1, MaxFrame: 1 << 20})
		errs := make(chan error, 3)
		go func() { _, err := client.Recv(ctx); errs <- err }()
		if err := server.Send(ctx, &wire.Reject{}); err != nil { // the blocked Recv takes it
			t.Fatal(err)
		}
		if err := <-errs; err != nil {
			t.Fatalf("Recv: %v", err)
		}
		go func() { _, err := client.Recv(ctx); errs <- err }()
		if err := client.Send(ctx, &wire.Reject{}); err != nil { // fills client→server
			t.Fatal(err)
		}
		go func() { errs <- client.Send(ctx, &wire.Reject{}) }()
		synctest.Wait() // both blocked
		if len(errs) != 0 {
			t.Fatalf("an operation returned early: %v", <-errs)
		}
		client.Close()
		for range 2 {
			if err := <-errs; !errors.Is(err, ErrClosed) {
				t.Errorf("blocked call after Close: %v, want ErrClosed", err)
			}
		}
	})
}

// TestMemBackpressure: Send blocks on a full queue until the peer receives
// or ctx ends; with FailWhenFull it fails at once.
func TestMemBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		client, server, _ := pair(t, MemConfig{QueueLen: 2, MaxFrame: 1 << 20})
		for i := range 2 {
			if err := client.Send(ctx, &wire.Push{Samples: i}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := client.Send(tctx, &wire.Push{Samples: 2}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send on a full queue: %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("Send gave up after %v, want 3s", waited)
		}
		done := make(chan error)
		go func() { done <- client.Send(ctx, &wire.Push{Samples: 2}) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Send on a full queue returned %v", err)
		default:
		}
		for want := range 3 {
			m, err := server.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.(*wire.Push).Samples; got != want {
				t.Errorf("message %d has samples %d: order lost", want, got)
			}
			if want == 0 {
				if err := <-done; err != nil {
					t.Errorf("blocked Send after room was made: %v", err)
				}
			}
		}
	})
	t.Run("fail when full", func(t *testing.T) {
		client, _, _ := pair(t, MemConfig{QueueLen: 1, MaxFrame: 1 << 20, FailWhenFull: true})
		if err := client.Send(context.Background(), &wire.Push{}); err != nil {
			t.Fatal(err)
		}
		if err := client.Send(context.Background(), &wire.Push{}); !errors.Is(err, ErrQueueFull) {
			t.Errorf("Send on a full queue: %v, want ErrQueueFull", err)
		}
	})
}

// TestMemRecvTimeout: a Recv that times out leaves the connection usable.
func TestMemRecvTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server, _ := pair(t, DefaultMemConfig())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := server.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Recv: %v, want DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("Recv gave up after %v, want 5s", waited)
		}
		exchange(t, client, server)
	})
}

// TestMemDialBacklog: Dial waits while the listener's backlog is full.
func TestMemDialBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, err := NewMemNetwork(MemConfig{QueueLen: 1, MaxFrame: 100})
		if err != nil {
			t.Fatal(err)
		}
		l, err := n.Listen("hub")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := n.Dial(context.Background(), "hub"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := n.Dial(ctx, "hub"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Dial on a full backlog: %v, want DeadlineExceeded", err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		if _, err := n.Dial(ctx, "hub"); !errors.Is(err, context.Canceled) {
			t.Errorf("Dial with a cancelled context: %v, want Canceled", err)
		}
	})
}

// TestMemFrameCap: the receiver's cap applies, through the real codec.
func TestMemFrameCap(t *testing.T) {
	client, server, _ := pair(t, MemConfig{QueueLen: 4, MaxFrame: 1000})
	ctx := context.Background()
	if err := client.Send(ctx, &wire.Push{Gradient: make(wire.Floats, 1000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Recv(ctx); !errors.Is(err, wire.ErrTooLarge) {
		t.Errorf("Recv of a 4000-byte frame with a 1000-byte cap: %v, want wire.ErrTooLarge", err)
	}
}

// TestMemConcurrentSends: concurrent Sends are serialised; every message
// arrives whole.
func TestMemConcurrentSends(t *testing.T) {
	client, server, _ := pair(t, DefaultMemConfig())
	ctx := context.Background()
	const senders, each = 4, 50
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				g := make(wire.Floats, 100)
				for j := range g {
					g[j] = float32(s*each + i)
				}
				if err := client.Send(ctx, &wire.Push{Samples: s*each + i, Gradient: g}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[int]bool{}
	for range senders * each {
		m, err := server.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := m.(*wire.Push)
		for _, v := range p.Gradient {
			if int(v) != p.Samples {
				t.Fatalf("message %d holds a value %v of another", p.Samples, v)
			}
		}
		seen[p.Samples] = true
	}
	wg.Wait()
	if len(seen) != senders*each {
		t.Errorf("%d distinct messages, want %d", len(seen), senders*each)
	}
}

package p2p

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"math"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// loopback is the listen set of test hosts: both transports, loopback only.
var loopback = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}

// newTestHost starts a host on loopback (unless cfg.Listen says otherwise)
// and closes it when the test ends.
func newTestHost(t testing.TB, cfg HostConfig) *Host {
	t.Helper()
	if cfg.Listen == nil {
		cfg.Listen = loopback
	}
	h, err := NewHost(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// addrWith returns h's address that contains transport ("/tcp/",
// "/quic-v1/").
func addrWith(t testing.TB, h *Host, transport string) string {
	t.Helper()
	for _, a := range h.Addrs() {
		if strings.Contains(a, transport) {
			return a
		}
	}
	t.Fatalf("host has no %s address among %v", transport, h.Addrs())
	return ""
}

// testCtx returns a context that ends with the test or after d.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// randomFloats returns n floats drawn from a seeded generator, including
// negative zero, infinities and a NaN, whose bits must survive the trip.
func randomFloats(seed uint64, n int) wire.Floats {
	r := mrand.New(mrand.NewPCG(seed, 1))
	f := make(wire.Floats, n)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	if n >= 4 {
		f[0], f[1], f[2] = float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN())
	}
	return f
}

func TestAddrs(t *testing.T) {
	h := newTestHost(t, HostConfig{})
	addrs := h.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("Addrs() = %v, want one TCP and one QUIC address", addrs)
	}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "/ip4/127.0.0.1/") || !strings.HasSuffix(a, "/p2p/"+h.ID()) {
			t.Errorf("address %q: want /ip4/127.0.0.1/… ending in /p2p/%s", a, h.ID())
		}
	}
	addrWith(t, h, "/tcp/")
	addrWith(t, h, "/quic-v1/")
	l := h.Listen()
	defer l.Close()
	if l.Addr() != addrs[0] {
		t.Errorf("Listener.Addr() = %q, want %q", l.Addr(), addrs[0])
	}
}

// TestRoundTrip sends a gradient of the size of lenet-caffe (431,080
// floats) from a worker to a hub and a Merged back, over each transport,
// and checks every bit and the authenticated peer ids.
func TestRoundTrip(t *testing.T) {
	const n = 431080
	for _, tc := range []struct{ name, transport string }{
		{"tcp", "/tcp/"},
		{"quic", "/quic-v1/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			hub, worker := newTestHost(t, HostConfig{}), newTestHost(t, HostConfig{})
			l := hub.Listen()
			defer l.Close()

			wc, err := worker.Dial(ctx, addrWith(t, hub, tc.transport))
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer wc.Close()
			push := &wire.Push{Header: wire.Header{Iteration: 7, Sender: "w1"}, Samples: 32, ComputeNanos: 12345, Loss: 2.25, Gradient: randomFloats(1, n)}
			if err := wc.Send(ctx, push); err != nil {
				t.Fatalf("Send push: %v", err)
			}
			hc, err := l.Accept(ctx)
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			defer hc.Close()
			if hc.RemotePeer() != worker.ID() || wc.RemotePeer() != hub.ID() {
				t.Errorf("RemotePeer: hub sees %s, want %s; worker sees %s, want %s", hc.RemotePeer(), worker.ID(), wc.RemotePeer(), hub.ID())
			}
			m, err := hc.Recv(ctx)
			if err != nil {
				t.Fatalf("hub Recv: %v", err)
			}
			got, ok := m.(*wire.Push)
			if !ok {
				t.Fatalf("hub got %T, want *wire.Push", m)
			}
			// The hub times what arrives (hub.Core.ObserveComm, the dashboard's
			// push time): the libp2p Conn must pass the stream's timing on.
			if sp, ok := hc.(transport.Spanned); !ok {
				t.Errorf("hub's Conn %T does not implement transport.Spanned", hc)
			} else if d := sp.RecvSpan(); d < 0 {
				t.Errorf("RecvSpan = %v, want >= 0", d)
			}
			if got.Iteration != 7 || got.Sender != "w1" || got.Samples != 32 || got.ComputeNanos != 12345 || got.Loss != 2.25 {
				t.Errorf("push fields = %+v", got.Header)
			}
			sameBits(t, "push gradient", got.Gradient, push.Gradient)

			merged := &wire.Merged{Header: wire.Header{Iteration: 7, Sender: "hub"}, Gradient: randomFloats(2, n), LR: 0.01, BatchSizes: wire.BatchSizes{"w1": 40}}
			if err := hc.Send(ctx, merged); err != nil {
				t.Fatalf("hub Send: %v", err)
			}
			m, err = wc.Recv(ctx)
			if err != nil {
				t.Fatalf("worker Recv: %v", err)
			}
			back, ok := m.(*wire.Merged)
			if !ok {
				t.Fatalf("worker got %T, want *wire.Merged", m)
			}
			if back.LR != 0.01 || back.BatchSizes["w1"] != 40 {
				t.Errorf("merged fields: LR %v, batches %v", back.LR, back.BatchSizes)
			}
			sameBits(t, "merged gradient", back.Gradient, merged.Gradient)
		})
	}
}

// sameBits compares two float vectors bit for bit (NaN included).
func sameBits(t *testing.T, what string, got, want wire.Floats) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestDialErrors checks that each way of dialing wrongly fails at once
// with the right sentinel.
func TestDialErrors(t *testing.T) {
	hub := newTestHost(t, HostConfig{})
	l := hub.Listen()
	defer l.Close()
	silent := newTestHost(t, HostConfig{}) // serves no cotrain protocol
	worker := newTestHost(t, HostConfig{})
	gone := newTestHost(t, HostConfig{})
	goneAddr := addrWith(t, gone, "/tcp/")
	gone.Close()

	stranger, err := GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other := newTestHost(t, HostConfig{Identity: stranger})
	otherID := other.ID()
	other.Close()
	hubTCP := addrWith(t, hub, "/tcp/")
	wrongPeer := strings.TrimSuffix(hubTCP, hub.ID()) + otherID

	for _, tc := range []struct {
		name, addr string
		want       []error
		text       string // the message must contain it
	}{
		{"garbage", "not a multiaddr", []error{ErrAddr}, ""},
		{"no peer id", strings.TrimSuffix(hubTCP, "/p2p/"+hub.ID()), []error{ErrAddr}, ""},
		{"peer id only", "/p2p/" + hub.ID(), []error{ErrAddr}, ""},
		{"self", addrWith(t, worker, "/tcp/"), []error{ErrAddr}, ""},
		{"wrong peer at the address", wrongPeer, []error{ErrConnect, transport.ErrRefused}, "another peer answers"},
		{"nobody listening", goneAddr, []error{ErrConnect, transport.ErrRefused}, "connection refused"},
		{"peer without the protocol", addrWith(t, silent, "/tcp/"), []error{ErrProtocol, transport.ErrRefused}, "is a hub running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 10*time.Second)
			c, err := worker.Dial(ctx, tc.addr)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%q) succeeded", tc.addr)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("Dial(%q) = %v, want it to wrap %v", tc.addr, err, w)
				}
			}
			t.Logf("Dial(%q): %v", tc.addr, err)
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
			if !strings.HasPrefix(err.Error(), "p2p: ") {
				t.Errorf("error %q lacks the p2p: prefix", err)
			}
		})
	}
}

// TestPrivateNetwork checks that only peers holding the hub's PSK connect.
func TestPrivateNetwork(t *testing.T) {
	key := func() []byte {
		k, err := GeneratePSK(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	pskA, pskB := key(), key()
	tcp := []string{"/ip4/127.0.0.1/tcp/0"}
	hub := newTestHost(t, HostConfig{Listen: tcp, PSK: pskA})
	l := hub.Listen()
	defer l.Close()
	addr := addrWith(t, hub, "/tcp/")

	for _, tc := range []struct {
		name    string
		psk     []byte
		wantErr string // "" for success
	}{
		{"same key", pskA, ""},
		{"other key", pskB, "same swarm key"},
		{"no key", nil, "same swarm key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 10*time.Second)
			w := newTestHost(t, HostConfig{Listen: tcp, PSK: tc.psk})
			c, err := w.Dial(ctx, addr)
			if tc.wantErr != "" {
				if err == nil {
					c.Close()
					t.Fatalf("Dial succeeded across different private networks")
				}
				t.Logf("Dial: %v", err)
				if !errors.Is(err, ErrConnect) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Dial = %v, want ErrConnect mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			if err := c.Send(ctx, &wire.Register{Device: "phone"}); err != nil {
				t.Fatalf("Send: %v", err)
			}
			hc, err := l.Accept(ctx)
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			defer hc.Close()
			if m, err := hc.Recv(ctx); err != nil || m.(*wire.Register).Device != "phone" {
				t.Fatalf("Recv = %v, %v", m, err)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	psk := make([]byte, PSKSize)
	for _, tc := range []struct {
		name string
		cfg  HostConfig
	}{
		{"QUIC with a PSK", HostConfig{Listen: loopback, PSK: psk}},
		{"short PSK", HostConfig{Listen: loopback[:1], PSK: psk[:16]}},
		{"bad listen address", HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/x"}}},
		{"negative MaxFrame", HostConfig{Listen: loopback, MaxFrame: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHost(context.Background(), tc.cfg)
			if err == nil {
				h.Close()
				t.Fatal("NewHost succeeded")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("NewHost = %v, want ErrConfig", err)
			}
		})
	}
}

// connected returns a connected pair (hub side, worker side) over TCP.
func connected(t testing.TB, hub, worker *Host, l transport.Listener) (transport.Conn, transport.Conn) {
	t.Helper()
	ctx := testCtx(t, 10*time.Second)
	wc, err := worker.Dial(ctx, addrWith(t, hub, "/tcp/"))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	// The hub's handler runs once the first frame arrives (libp2p
	// negotiates the protocol lazily), so say hello first.
	if err := wc.Send(ctx, &wire.Register{Device: "w"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	hc, err := l.Accept(ctx)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if _, err := hc.Recv(ctx); err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return hc, wc
}

// TestClose checks what each side sees when the other goes away.
func TestClose(t *testing.T) {
	hub, worker := newTestHost(t, HostConfig{}), newTestHost(t, HostConfig{})
	l := hub.Listen()
	defer l.Close()

	t.Run("peer closes", func(t *testing.T) {
		for _, closer := range []string{"worker", "hub"} {
			hc, wc := connected(t, hub, worker, l)
			a, b := wc, hc // a closes, b observes
			if closer == "hub" {
				a, b = hc, wc
			}
			ctx := testCtx(t, 10*time.Second)
			if err := a.Send(ctx, &wire.Goodbye{Reason: "done"}); err != nil {
				t.Fatalf("%s Send: %v", closer, err)
			}
			a.Close()
			if m, err := b.Recv(ctx); err != nil || m.Kind() != wire.KindGoodbye {
				t.Fatalf("after %s closed, the last message: %v, %v", closer, m, err)
			}
			if _, err := b.Recv(ctx); err != io.EOF && !errors.Is(err, transport.ErrClosed) {
				t.Fatalf("after %s closed, Recv = %v, want io.EOF or ErrClosed", closer, err)
			}
			if err := a.Send(ctx, &wire.Goodbye{}); !errors.Is(err, transport.ErrClosed) {
				t.Errorf("Send after own Close = %v, want ErrClosed", err)
			}
			if _, err := a.Recv(ctx); !errors.Is(err, transport.ErrClosed) {
				t.Errorf("Recv after own Close = %v, want ErrClosed", err)
			}
			b.Close()
		}
	})
	t.Run("host closes", func(t *testing.T) {
		other := newTestHost(t, HostConfig{})
		hc, wc := connected(t, hub, other, l)
		defer hc.Close()
		other.Close()
		ctx := testCtx(t, 10*time.Second)
		if _, err := hc.Recv(ctx); err == nil {
			t.Fatal("Recv succeeded after the peer's host closed")
		}
		if _, err := wc.Recv(ctx); err == nil {
			t.Fatal("Recv on a closed host's conn succeeded")
		}
	})
	t.Run("listener closes", func(t *testing.T) {
		l2 := hub.Listen() // replaces l: l now accepts nothing
		ctx := testCtx(t, 10*time.Second)
		if _, err := l.Accept(ctx); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Accept on a replaced listener = %v, want ErrClosed", err)
		}
		l2.Close()
		if _, err := l2.Accept(ctx); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Accept after Close = %v, want ErrClosed", err)
		}
		if c, err := worker.Dial(ctx, addrWith(t, hub, "/tcp/")); !errors.Is(err, ErrProtocol) {
			if err == nil {
				c.Close()
			}
			t.Errorf("Dial after the hub stopped listening = %v, want ErrProtocol", err)
		}
	})
	t.Run("accept deadline", func(t *testing.T) {
		l3 := hub.Listen()
		defer l3.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := l3.Accept(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Accept = %v, want DeadlineExceeded", err)
		}
	})
}

// TestBadFrame sends bytes that are not a frame on a raw stream: the hub's
// Recv must return the wire error, and the sender must see its stream reset.
func TestBadFrame(t *testing.T) {
	hub, worker := newTestHost(t, HostConfig{Listen: loopback[:1], MaxFrame: 1 << 10}), newTestHost(t, HostConfig{})
	l := hub.Listen()
	defer l.Close()
	ctx := testCtx(t, 10*time.Second)
	info, err := parsePeerAddr(addrWith(t, hub, "/tcp/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Libp2p().Connect(ctx, info); err != nil {
		t.Fatal(err)
	}
	s, err := worker.Libp2p().NewStream(ctx, info.ID, ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Reset()
	// A length prefix of 1 MiB against the hub's cap of 1 KiB.
	if _, err := s.Write([]byte{0, 0x10, 0, 0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	hc, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if _, err := hc.Recv(ctx); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("Recv = %v, want wire.ErrTooLarge", err)
	}
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(make([]byte, 1)); err == nil || err == io.EOF {
		t.Fatalf("the sender's Read = %v, want a reset error", err)
	}
}

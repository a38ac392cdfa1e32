package hub_test

import (
	"bytes"
	"context"
	stdnet "net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// pipeListener hands the hub driver connections made of net.Pipe streams,
// so a test can write raw bytes: frames no well-behaved peer would send.
type pipeListener struct {
	conns chan transport.Conn
	done  chan struct{}
}

func (l *pipeListener) Accept(ctx context.Context) (transport.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (l *pipeListener) Addr() string { return "pipe" }
func (l *pipeListener) Close() error { close(l.done); return nil }

// TestDriverRejectsUnreadableFrames: a peer that speaks another protocol
// version, or sends a frame of an unknown kind, is told why in a Reject
// (codes version and protocol) before the hub hangs up, instead of seeing
// its connection drop without a word.
func TestDriverRejectsUnreadableFrames(t *testing.T) {
	var reg bytes.Buffer
	if err := wire.NewWriter(&reg).WriteMessage(&wire.Register{Device: "old phone"}); err != nil {
		t.Fatal(err)
	}
	// A frame is a 4-byte length, then a msgpack array whose first two
	// fields are the version and the kind (small positive fixints).
	if reg.Bytes()[5] != byte(wire.ProtocolVersion) {
		t.Fatalf("frame layout changed: byte 5 is %#x, want the version %d", reg.Bytes()[5], wire.ProtocolVersion)
	}
	patch := func(at int, v byte) []byte {
		b := bytes.Clone(reg.Bytes())
		b[at] = v
		return b
	}
	cases := []struct {
		name  string
		frame []byte
		code  string
		says  string
	}{
		{"newer version", patch(5, byte(wire.ProtocolVersion)+1), wire.CodeVersion, "protocol version"},
		{"unknown kind", patch(6, 0x7f), wire.CodeProtocol, "unknown message kind"},
	}
	for _, c := range cases {
		// In a synctest bubble: the ticks, the read deadline and the
		// writer's linger before it hangs up run on the bubble's clock.
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := &pipeListener{conns: make(chan transport.Conn, 1), done: make(chan struct{})}
				h := newHubCore(t, trainConfig(2, 0), 1)
				d := &hub.Driver{Core: h.Core, Trainer: h.Trainer(), Listener: ln, Tick: 10 * time.Millisecond,
					DrainTimeout: 100 * time.Millisecond}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- d.Run(ctx) }()
				defer func() { cancel(); <-done; ln.Close() }()

				hubEnd, peer := stdnet.Pipe()
				ln.conns <- transport.NewStreamConn(hubEnd, "w-old", 1<<20)
				go peer.Write(c.frame)
				r := wire.NewReader(peer, 1<<20)
				peer.SetReadDeadline(time.Now().Add(5 * time.Second))
				m, err := r.ReadMessage(nil)
				if err != nil {
					t.Fatalf("no answer from the hub: %v", err)
				}
				rej, ok := m.(*wire.Reject)
				if !ok || rej.Code != c.code || !strings.Contains(rej.Message, c.says) {
					t.Fatalf("got %T %+v, want a Reject with code %q saying %q", m, m, c.code, c.says)
				}
				if _, err := r.ReadMessage(nil); err == nil {
					t.Fatal("the connection stayed open after the Reject")
				}
				peer.Close()
			})
		})
	}
}

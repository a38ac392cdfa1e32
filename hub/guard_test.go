package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestAllowlist: with Config.Allow set, a peer not on it is answered with a
// Reject (CodeAuth, naming its id), refused with ErrNotAllowed, counted as a
// refusal, and never becomes a worker; peers on it run as usual.
func TestAllowlist(t *testing.T) {
	cases := []struct {
		name    string
		allow   map[string]bool
		from    string
		refused bool
	}{
		{"no allowlist lets anyone in", nil, "anyone", false},
		{"on the list", map[string]bool{"w0": true, "w1": true}, "w1", false},
		{"not on the list", map[string]bool{"w0": true, "w1": true}, "mallory", true},
		{"empty list lets nobody in", map[string]bool{}, "w0", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := trainConfig(2, 0)
			cfg.Allow = c.allow
			h := newHubCore(t, cfg, 1)
			want := state.NetHash(h.Trainer().Net)
			err := h.Step(c.from, &wire.Register{Device: "test"})
			rd := h.Ready()
			if !c.refused {
				if err != nil || len(h.Workers()) != 1 {
					t.Fatalf("register: %v, workers %v", err, h.Workers())
				}
				return
			}
			if !errors.Is(err, hub.ErrNotAllowed) {
				t.Fatalf("register: %v, want ErrNotAllowed", err)
			}
			if len(h.Workers()) != 0 || state.NetHash(h.Trainer().Net) != want {
				t.Fatalf("a refused peer changed the hub: workers %v", h.Workers())
			}
			if len(rd.Messages) != 1 || rd.Messages[0].To != c.from {
				t.Fatalf("messages %+v, want one Reject to %s", rd.Messages, c.from)
			}
			r, ok := rd.Messages[0].Msg.(*wire.Reject)
			if !ok || r.Code != wire.CodeAuth || !strings.Contains(r.Message, c.from) {
				t.Fatalf("sent %+v, want a Reject with code auth naming %s", rd.Messages[0].Msg, c.from)
			}
			if len(rd.Events) != 1 || rd.Events[0].Kind != hub.EventRefused {
				t.Fatalf("events %+v, want one refusal", rd.Events)
			}
			h.Advance()
			// Its pushes are refused as from a stranger.
			if err := h.Step(c.from, push(0, 1, h.Trainer().Net.NumParams(), 1)); !errors.Is(err, hub.ErrUnknownPeer) {
				t.Fatalf("push from the refused peer: %v, want ErrUnknownPeer", err)
			}
		})
	}
}

// startDriver runs a hub driver over an in-memory network and returns the
// network and the listener's address; the driver stops with the test.
func startDriver(t *testing.T, cfg hub.Config, d *hub.Driver) (*transport.MemNetwork, string) {
	t.Helper()
	mn, err := transport.NewMemNetwork(transport.DefaultMemConfig())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mn.Listen("hub")
	if err != nil {
		t.Fatal(err)
	}
	h := newHubCore(t, cfg, 1)
	d.Core, d.Trainer, d.Listener, d.Tick = h.Core, h.Trainer(), ln, 10*time.Millisecond
	d.DrainTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		ln.Close()
	})
	return mn, "hub"
}

// closedWithin reports whether c's peer ends the connection within limit:
// Recv returns an error other than the context's.
func closedWithin(c transport.Conn, limit time.Duration) (wire.Message, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var last wire.Message
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			return last, ctx.Err() == nil
		}
		last = m
	}
}

// TestDriverBoundsStrangers: connections that never register are capped
// (MaxPending: one more is closed at once) and closed after
// RegisterTimeout; a peer off the allowlist gets its Reject and is then
// disconnected. It runs in a synctest bubble: the timeouts and waits below
// are virtual time, which passes only when every goroutine waits, so "at
// once" and "after RegisterTimeout" hold however loaded the machine is.
func TestDriverBoundsStrangers(t *testing.T) {
	synctest.Test(t, testDriverBoundsStrangers)
}

func testDriverBoundsStrangers(t *testing.T) {
	cfg := trainConfig(2, 0)
	cfg.Allow = map[string]bool{"w0": true}
	d := &hub.Driver{MaxPending: 2, RegisterTimeout: 300 * time.Millisecond}
	mn, addr := startDriver(t, cfg, d)
	ctx := context.Background()

	dialed := time.Now() // the driver accepts them after this: their timeout runs out after it
	var idle []transport.Conn
	for _, name := range []string{"a", "b"} {
		c, err := mn.Dialer(name).Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	time.Sleep(50 * time.Millisecond) // let the driver accept both
	extra, err := mn.Dialer("c").Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if _, closed := closedWithin(extra, 200*time.Millisecond); !closed {
		t.Fatal("a third unregistered connection stayed open past MaxPending 2")
	}
	for i, c := range idle {
		if _, closed := closedWithin(c, 2*time.Second); !closed {
			t.Fatalf("idle connection %d still open 2 s after it came", i)
		}
	}
	if waited := time.Since(dialed); waited < 300*time.Millisecond {
		t.Fatalf("idle connections closed %v after they were dialed, before RegisterTimeout 300ms", waited)
	}

	// The slots free up once the hub's goroutines for those connections
	// have ended; then a stranger registers and is refused.
	var last wire.Message
	var closed bool
	for range 40 {
		m, err := mn.Dialer("mallory").Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Send(ctx, &wire.Register{Device: "mallory's phone"}); err != nil {
			// Closed as over MaxPending before the Register went out (the
			// transport says "peer closed the connection"): not freed yet.
			m.Close()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		last, closed = closedWithin(m, 2*time.Second)
		m.Close()
		if last != nil {
			break
		}
		time.Sleep(50 * time.Millisecond) // closed as over MaxPending: not freed yet
	}
	r, ok := last.(*wire.Reject)
	if !closed || !ok || r.Code != wire.CodeAuth {
		t.Fatalf("stranger got %+v (connection closed: %v), want a Reject with code auth, then the end", last, closed)
	}
}

// TestDriverClosesAfterGoodbye: the hub closes a worker's connection as
// soon as it has read the worker's Goodbye. A leaving worker waits for that
// before it closes its end (worker.Driver): closing first, with the hub's
// messages unread, could reset the connection under the Goodbye.
func TestDriverClosesAfterGoodbye(t *testing.T) {
	synctest.Test(t, testDriverClosesAfterGoodbye)
}

func testDriverClosesAfterGoodbye(t *testing.T) {
	mn, addr := startDriver(t, trainConfig(2, 0), &hub.Driver{})
	ctx := context.Background()
	c, err := mn.Dialer("w0").Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(ctx, &wire.Register{Device: "phone"}); err != nil {
		t.Fatal(err)
	}
	// Registered, the worker waits for a second one: the hub keeps the
	// connection open.
	if _, closed := closedWithin(c, 500*time.Millisecond); closed {
		t.Fatal("the hub closed a registered worker's connection")
	}
	if err := c.Send(ctx, &wire.Goodbye{Reason: "the worker was stopped"}); err != nil {
		t.Fatal(err)
	}
	if _, closed := closedWithin(c, time.Second); !closed {
		t.Fatal("the hub kept the connection open 1 s after the worker's Goodbye")
	}
}

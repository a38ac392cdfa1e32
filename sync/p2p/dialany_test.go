package p2p

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/sync/transport"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestDialAny gives the worker every address a hub advertises, the ones it
// cannot reach first: a closed port on its own loopback (what another
// phone's loopback address means here) and an address on a network it is
// not on (TEST-NET-1, which never answers). The dial still reaches the hub,
// well within the time the unreachable address would take to fail.
func TestDialAny(t *testing.T) {
	hub, worker := newTestHost(t, HostConfig{}), newTestHost(t, HostConfig{})
	l := hub.Listen()
	defer l.Close()
	gone := newTestHost(t, HostConfig{})
	goneTCP := addrWith(t, gone, "/tcp/")
	gone.Close()
	suffix := "/p2p/" + hub.ID()
	closedPort := strings.TrimSuffix(goneTCP, "/p2p/"+gone.ID()) + suffix
	otherNet := "/ip4/192.0.2.1/tcp/4001" + suffix
	good := addrWith(t, hub, "/tcp/")

	ctx := testCtx(t, 20*time.Second)
	start := time.Now()
	c, err := worker.DialAny(ctx, []string{closedPort, otherNet, good})
	if err != nil {
		t.Fatalf("DialAny: %v", err)
	}
	defer c.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("DialAny took %v: it waited on an unreachable address", d)
	}
	if err := c.Send(ctx, &wire.Register{Device: "w"}); err != nil {
		t.Fatal(err)
	}
	hc, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if m, err := hc.Recv(ctx); err != nil || hc.RemotePeer() != worker.ID() {
		t.Fatalf("hub got %v, %v from %s", m, err, hc.RemotePeer())
	}

	// One address this host cannot parse among the hub's (a garbled mDNS
	// record, a transport it does not know) does not stop the dial.
	another := newTestHost(t, HostConfig{})
	c2, err := another.DialAny(ctx, []string{"/garbled" + suffix, good})
	if err != nil {
		t.Fatalf("DialAny with one unparsable address: %v", err)
	}
	c2.Close()

	// A host not yet connected to the hub, for the failures.
	fresh := newTestHost(t, HostConfig{})
	for _, tc := range []struct {
		name  string
		addrs []string
		want  []error
		text  string
	}{
		{"none", nil, []error{ErrAddr}, "no address"},
		{"two peers", []string{good, goneTCP}, []error{ErrAddr}, "must be one peer's"},
		{"all bad", []string{"not a multiaddr", "/ip4/192.0.2.1/tcp/4001"}, []error{ErrAddr}, "not a multiaddr"},
		{"all closed", []string{closedPort, strings.Replace(closedPort, "/ip4/127.0.0.1/", "/ip4/127.0.0.2/", 1)},
			[]error{ErrConnect, transport.ErrRefused}, " or "},
	} {
		c, err := fresh.DialAny(testCtx(t, 10*time.Second), tc.addrs)
		if err == nil {
			c.Close()
			t.Errorf("%s: DialAny(%q) succeeded", tc.name, tc.addrs)
			continue
		}
		for _, w := range tc.want {
			if !errors.Is(err, w) {
				t.Errorf("%s: DialAny = %v, want it to wrap %v", tc.name, err, w)
			}
		}
		if !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.text)
		}
	}
}

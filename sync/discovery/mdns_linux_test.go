package discovery

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/cotrain/cotrain/sync/wire"
	"golang.org/x/sys/unix"
)

// childEnv marks the copy of the test binary that runs inside the network
// namespace TestMDNS creates.
const childEnv = "COTRAIN_MDNS_NETNS"

// TestMDNS runs TestMDNSInNamespace in a child process of its own network
// namespace, whose only interface is a loopback that the child brings up
// with multicast: real mDNS packets, which can reach no other interface
// and no other program (see doc.go). The host's interfaces are untouched.
func TestMDNS(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("this is the child; TestMDNSInNamespace runs here")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestMDNSInNamespace$", "-test.v", "-test.count=1", "-test.timeout=50s")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if os.Geteuid() != 0 {
		// Without root, a user namespace gives the child the capabilities
		// it needs over its own network namespace, where the kernel
		// allows unprivileged user namespaces.
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process in a new network namespace (%v): the real mDNS test needs root (CAP_SYS_ADMIN) or unprivileged user namespaces", err)
	}
	err = cmd.Wait()
	t.Logf("child in its own network namespace:\n%s", out.String())
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestMDNSInNamespace") {
		t.Fatal("the child did not run TestMDNSInNamespace to a pass")
	}
}

// TestMDNSInNamespace is TestMDNS's child. It refuses to run anywhere but in
// a fresh network namespace (one interface, lo), so it can never bring up
// multicast on a real interface.
func TestMDNSInNamespace(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only inside the network namespace TestMDNS creates")
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) != 1 || ifaces[0].Name != "lo" {
		t.Fatalf("refusing to run: expected a fresh network namespace with lo only, found %v", ifaces)
	}
	lo := loopbackMulticast(t)
	in := WithInterfaces(lo)
	window := WithWindow(400 * time.Millisecond)
	mdnsScenarios(t, in, window)
}

// loopbackMulticast brings lo up with the MULTICAST flag (a fresh namespace
// has it down, and Linux's lo lacks MULTICAST) and returns it.
func loopbackMulticast(t *testing.T) net.Interface {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatalf("reading lo's flags: %v", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_MULTICAST)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("setting lo up with multicast: %v", err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if lo.Flags&net.FlagMulticast == 0 || lo.Flags&net.FlagUp == 0 {
		t.Fatalf("lo flags %v after setting UP and MULTICAST", lo.Flags)
	}
	return *lo
}

// mdnsScenarios advertises hubs and finds them over real mDNS.
func mdnsScenarios(t *testing.T, opts ...Option) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	peer := func(c byte) string { return testPeer[:len(testPeer)-1] + string(c) }
	hub := func(session, model string, c byte, extra ...string) Info {
		addrs := append([]string{"/ip4/127.0.0.1/tcp/4001/p2p/" + peer(c), "/ip4/127.0.0.1/udp/4001/quic-v1/p2p/" + peer(c)}, extra...)
		return Info{Session: session, Model: model, PeerID: peer(c), Addrs: addrs}
	}
	advertise := func(info Info) func() {
		t.Helper()
		stop, err := Advertise(ctx, info, opts...)
		if err != nil {
			t.Fatalf("Advertise(%q): %v", info.Session, err)
		}
		t.Cleanup(stop)
		return stop
	}
	same := func(got, want Info) {
		t.Helper()
		if got.Session != want.Session || got.Model != want.Model || got.PeerID != want.PeerID ||
			strings.Join(got.Addrs, " ") != strings.Join(want.Addrs, " ") || got.Port != 4001 || got.Instance == "" {
			t.Errorf("found %+v\nwant   %+v (port 4001)", got, want)
		}
	}

	alpha := hub("alpha", "lenet5", 'a', "/dns4/"+strings.Repeat("long-name.", 25)+"example/tcp/4001/p2p/"+peer('a'))
	stopAlpha := advertise(alpha)
	t.Run("find the only hub", func(t *testing.T) {
		start := time.Now()
		got, err := Find(ctx, "alpha", opts...)
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		t.Logf("found %s in %v (window 400ms)", got.Instance, time.Since(start).Round(time.Millisecond))
		same(got, alpha) // the 260-byte address crossed as several TXT strings
		if got, err = Find(ctx, "", opts...); err != nil || got.PeerID != alpha.PeerID {
			t.Errorf("Find(\"\") = %v, %v; want the only hub", got.PeerID, err)
		}
	})

	beta := hub("beta", "lenet-caffe", 'b')
	advertise(beta)
	t.Run("two sessions", func(t *testing.T) {
		got, err := Find(ctx, "beta", opts...)
		if err != nil {
			t.Fatalf("Find(beta): %v", err)
		}
		same(got, beta)
		all, err := Browse(ctx, "", opts...)
		if err != nil || len(all) != 2 || all[0].Session != "alpha" || all[1].Session != "beta" {
			t.Fatalf("Browse(\"\") = %+v, %v; want alpha and beta", all, err)
		}
		if _, err := Find(ctx, "", opts...); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("Find(\"\") with two hubs = %v, want ErrAmbiguous", err)
		}
		_, err = Find(ctx, "gamma", opts...)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"alpha", "beta"`) {
			t.Errorf("Find(gamma) = %v, want ErrNotFound naming the sessions heard", err)
		}
	})

	t.Run("two hubs of one session", func(t *testing.T) {
		stop := advertise(hub("beta", "lenet5", 'c'))
		defer stop()
		if _, err := Find(ctx, "beta", opts...); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("Find(beta) with two beta hubs = %v, want ErrAmbiguous", err)
		}
	})

	t.Run("stopped hub", func(t *testing.T) {
		stopAlpha()
		stopAlpha() // a second stop does nothing
		if got, err := Find(ctx, "alpha", opts...); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(alpha) after stop = %+v, %v; want ErrNotFound", got, err)
		}
	})

	t.Run("join a real hub", func(t *testing.T) {
		// The worker's whole way in: find the session, dial an address
		// from the TXT record, and talk over the libp2p stream.
		h, err := p2p.NewHost(ctx, p2p.HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		l := h.Listen()
		defer l.Close()
		advertise(Info{Session: "real", Model: "lenet5", PeerID: h.ID(), Addrs: h.Addrs()})
		found, err := Find(ctx, "real", opts...)
		if err != nil {
			t.Fatalf("Find(real): %v", err)
		}
		w, err := p2p.NewHost(ctx, p2p.HostConfig{Listen: []string{"/ip4/127.0.0.1/tcp/0"}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		c, err := w.Dial(ctx, found.Addrs[0])
		if err != nil {
			t.Fatalf("Dial(%s): %v", found.Addrs[0], err)
		}
		defer c.Close()
		if err := c.Send(ctx, &wire.Register{Device: "phone"}); err != nil {
			t.Fatal(err)
		}
		hc, err := l.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer hc.Close()
		if m, err := hc.Recv(ctx); err != nil || hc.RemotePeer() != w.ID() {
			t.Fatalf("hub Recv = %v, %v from %s; want a Register from %s", m, err, hc.RemotePeer(), w.ID())
		}
	})

	t.Run("context ends advertising", func(t *testing.T) {
		actx, acancel := context.WithCancel(ctx)
		if _, err := Advertise(actx, hub("delta", "m", 'd'), opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := Find(ctx, "delta", opts...); err != nil {
			t.Fatalf("Find(delta): %v", err)
		}
		acancel()
		time.Sleep(50 * time.Millisecond) // the stop runs in Advertise's goroutine
		if _, err := Find(ctx, "delta", opts...); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(delta) after its context ended = %v, want ErrNotFound", err)
		}
	})
}

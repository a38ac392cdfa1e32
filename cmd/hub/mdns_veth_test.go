package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// twoDevicesEnv marks the copy of the test binary that builds the two
// "phones" inside a network namespace of its own.
const twoDevicesEnv = "COTRAIN_HUB_TWO_DEVICES"

// TestWorkerFindsHubOnAnotherDevice is discovery between two devices: a
// hub and a worker, each in a network namespace of its own (each a phone,
// with its own loopback and one Wi-Fi-like interface), joined by a veth
// pair (the LAN). The worker gets no --hub: it must find the hub by mDNS
// and dial an address that leads to the other namespace. The hub also has
// a loopback address to advertise; a worker that dialled it would reach
// its own namespace and never the hub, which is how discovery failed
// between phones before.
//
// Everything happens inside a fresh network namespace of the test's own
// (which the veth pair and the two inner namespaces live in), so no
// interface of the machine is touched. It needs root (CAP_SYS_ADMIN and
// CAP_NET_ADMIN) and iproute2's ip, as in CI, and skips without them.
func TestWorkerFindsHubOnAnotherDevice(t *testing.T) {
	if os.Getenv(twoDevicesEnv) != "" {
		t.Skip("this is the child")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip on PATH: the veth pair needs iproute2's ip (Debian: apt-get install iproute2; scripts/test.sh installs it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and a veth pair")
	}
	out, err := inNewNetNamespace(t, "TestTwoDevicesInNamespace", twoDevicesEnv)
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child in its own network namespace: %v", err)
	}
}

// device is the shell prologue of a process that runs in a network
// namespace of its own (a "phone"): it waits until its end of the veth pair
// has been moved in, brings lo and that interface up with the addresses
// given (separated by spaces), and then execs the command that follows.
const device = `set -e
i=0
until ip link show "$1" >/dev/null 2>&1; do
	i=$((i+1)); [ $i -lt 200 ] || { echo "no $1 after 10s" >&2; exit 1; }
	sleep 0.05
done
ip link set lo up
for a in $2; do ip addr add "$a" dev "$1"; done
ip link set "$1" up
shift 2
exec "$@"`

// onDevice starts bin in a new network namespace as a phone whose LAN
// interface iface (still in this namespace, moved in here) gets addrs.
func onDevice(t *testing.T, ctx context.Context, name, iface, addrs, bin string, args ...string) *proc {
	t.Helper()
	sh := append([]string{"-c", device, "sh", iface, addrs, bin}, args...)
	p := startWith(t, ctx, name, func(c *exec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	}, "sh", sh...)
	ip(t, "link", "set", iface, "netns", strconv.Itoa(p.cmd.Process.Pid))
	return p
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestTwoDevicesInNamespace is TestWorkerFindsHubOnAnotherDevice's child.
func TestTwoDevicesInNamespace(t *testing.T) {
	if os.Getenv(twoDevicesEnv) == "" {
		t.Skip("runs only inside the namespace TestWorkerFindsHubOnAnotherDevice creates")
	}
	ifaces, err := net.Interfaces()
	if err != nil || len(ifaces) != 1 || ifaces[0].Name != "lo" {
		t.Fatalf("refusing to run outside a fresh network namespace: %v %v", ifaces, err)
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	ip(t, "link", "add", "lan-hub", "type", "veth", "peer", "name", "lan-worker")

	// The hub's phone is on a second network too (10.66.0.0/24, say its
	// hotspot), which the worker's is not on: an address the worker
	// cannot reach that is not loopback, and which the hub advertises.
	h := onDevice(t, ctx, "hub", "lan-hub", "10.66.0.1/24 10.77.0.1/24", hubBin, "--model", "lenet5", "--data", "mnist",
		"--min-workers", "1", "--batch", "32", "--iterations", "5", "--listen", "/ip4/0.0.0.0/tcp/0",
		"--session", "two-phones", "--json", "--out", filepath.Join(dir, "hub"))
	var addrs []string
	for _, a := range h.until(t, "listening", 30*time.Second)["addrs"].([]any) {
		addrs = append(addrs, a.(string))
	}
	// The hub has three kinds of address; only the LAN one can work.
	has := func(addrs []string, ip string) bool {
		return slices.ContainsFunc(addrs, func(a string) bool { return strings.HasPrefix(a, "/ip4/"+ip+"/") })
	}
	if !has(addrs, "127.0.0.1") || !has(addrs, "10.77.0.1") || !has(addrs, "10.66.0.1") {
		t.Fatalf("hub addresses %v: want 127.0.0.1, 10.77.0.1 and 10.66.0.1 ones", addrs)
	}
	t.Logf("hub listens on %v", addrs)

	w := onDevice(t, ctx, "worker", "lan-worker", "10.77.0.2/24", workerBin, "--session", "two-phones",
		"--data", "mnist", "--shard", "0/1", "--listen", "/ip4/0.0.0.0/tcp/0", "--json", "--out", filepath.Join(dir, "w"))
	// The connected event names the addresses dialled: what mDNS brought.
	found := strings.Fields(w.until(t, "connected", 30*time.Second)["hub"].(string))
	t.Logf("the worker found and dialled %v", found)
	if has(found, "127.0.0.1") || !has(found, "10.77.0.1") || !has(found, "10.66.0.1") {
		t.Errorf("mDNS brought %v: want the hub's 10.77.0.1 and 10.66.0.1 addresses and no loopback", found)
	}
	hubDone := h.until(t, "done", time.Minute)
	wDone := w.until(t, "done", 30*time.Second)
	if hubDone["weights_sha256"] != wDone["weights_sha256"] || wDone["iterations"].(float64) != 5 {
		t.Errorf("hub %v, worker %v", hubDone, wDone)
	}
}

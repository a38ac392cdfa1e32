package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bins holds the hub and worker binaries, built once for the process tests.
var bins struct {
	once       sync.Once
	hub, work  string
	err        error
	dir        string
	buildError string
}

func buildBinaries(t *testing.T) (hubBin, workerBin string) {
	t.Helper()
	if dir := os.Getenv(binDirEnv); dir != "" {
		return filepath.Join(dir, "hub"), filepath.Join(dir, "worker")
	}
	bins.once.Do(func() {
		bins.dir, bins.err = os.MkdirTemp("", "cotrain-bins")
		if bins.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", bins.dir, "github.com/cotrain/cotrain/cmd/hub", "github.com/cotrain/cotrain/cmd/worker").CombinedOutput()
		if err != nil {
			bins.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
		bins.hub, bins.work = filepath.Join(bins.dir, "hub"), filepath.Join(bins.dir, "worker")
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.hub, bins.work
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// proc is a started hub or worker with its JSON lines.
type proc struct {
	name   string
	cmd    *exec.Cmd
	events chan map[string]any
	stderr *strings.Builder
	done   chan error
}

func start(t *testing.T, ctx context.Context, name, bin string, args ...string) *proc {
	t.Helper()
	return startWith(t, ctx, name, nil, bin, args...)
}

// startWith is start with prep, when not nil, applied to the command before
// it starts (to set its SysProcAttr, its environment).
func startWith(t *testing.T, ctx context.Context, name string, prep func(*exec.Cmd), bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	if prep != nil {
		prep(cmd)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, events: make(chan map[string]any, 1024), stderr: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				ev["_received"] = time.Now() // for the fault tests' timings
				p.events <- ev
			}
		}
		close(p.events)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, tail(p.stderr.String(), 3000))
		}
	})
	return p
}

// until returns the first event of kind; it fails the test if the process
// ends or the timeout passes first.
func (p *proc) until(t *testing.T, kind string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				t.Fatalf("%s ended before a %q event", p.name, kind)
			}
			if ev["event"] == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("%s: no %q event within %v", p.name, kind, timeout)
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestHubAndThreeWorkerProcesses is the bar: a hub and 3 workers as
// separate OS processes on loopback train lenet5 on disjoint MNIST shards
// for 300 iterations of global batch 192; all four weight files are
// identical and the test accuracy is at least 0.97.
func TestHubAndThreeWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for 300 iterations; skipped with -short")
	}
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	h := start(t, ctx, "hub", hubBin, "--model", "lenet5", "--data", "mnist", "--min-workers", "3", "--batch", "192",
		"--iterations", "300", "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false", "--json", "--out", filepath.Join(dir, "hub"))
	addrs := h.until(t, "listening", 30*time.Second)["addrs"].([]any)
	var ws []*proc
	for i := range 3 {
		ws = append(ws, start(t, ctx, fmt.Sprintf("worker %d", i), workerBin, "--hub", addrs[0].(string), "--data", "mnist",
			"--shard", fmt.Sprintf("%d/3", i), "--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, fmt.Sprint("w", i))))
	}
	hubDone := h.until(t, "done", 3*time.Minute)
	sum := hubDone["weights_sha256"]
	for _, w := range ws {
		done := w.until(t, "done", time.Minute)
		if done["weights_sha256"] != sum {
			t.Errorf("%s: weights_sha256 %v, hub's %v", w.name, done["weights_sha256"], sum)
		}
		if done["iterations"].(float64) != 300 {
			t.Errorf("%s: %v iterations", w.name, done["iterations"])
		}
		if err := <-w.done; err != nil {
			t.Errorf("%s exited: %v", w.name, err)
		}
	}
	if acc := hubDone["test_accuracy"].(float64); acc < 0.97 {
		t.Errorf("test accuracy %.4f after 300 iterations, want >= 0.97", acc)
	}
	if hubDone["iterations"].(float64) != 300 {
		t.Errorf("hub: %v iterations", hubDone["iterations"])
	}
	if err := <-h.done; err != nil {
		t.Errorf("hub exited: %v", err)
	}
	t.Logf("hub: %v", hubDone)
}

// childEnv and binDirEnv pass the mDNS test into its network namespace.
const (
	childEnv  = "COTRAIN_HUB_NETNS"
	binDirEnv = "COTRAIN_HUB_BINS"
)

// TestWorkerFindsHubByMDNS runs a hub and a worker with no --hub inside a
// network namespace of their own, whose only interface is a loopback with
// multicast on: real mDNS, reaching nothing outside the namespace.
func TestWorkerFindsHubByMDNS(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("this is the child")
	}
	out, err := inNewNetNamespace(t, "TestMDNSJoinInNamespace", childEnv)
	if err != nil {
		t.Fatalf("child in its own network namespace: %v\n%s", err, out)
	}
}

// inNewNetNamespace runs the test named child of this test binary in a
// network namespace of its own (the binaries built, env set to 1 so the
// child knows it is one) and returns what it printed, and an error when it
// failed or did not pass. It skips the caller where a namespace cannot be
// made (not root).
func inNewNetNamespace(t *testing.T, child, env string) (string, error) {
	t.Helper()
	hubBin, _ := buildBinaries(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^"+child+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"=1", binDirEnv+"="+filepath.Dir(hubBin))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process in a new network namespace (%v): this test needs root (CAP_SYS_ADMIN)", err)
	}
	err = cmd.Wait()
	if err == nil && !strings.Contains(out.String(), "--- PASS: "+child) {
		err = fmt.Errorf("%s did not pass", child)
	}
	return out.String(), err
}

// TestMDNSJoinInNamespace is TestWorkerFindsHubByMDNS's child.
func TestMDNSJoinInNamespace(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only inside the namespace TestWorkerFindsHubByMDNS creates")
	}
	ifaces, err := net.Interfaces()
	if err != nil || len(ifaces) != 1 || ifaces[0].Name != "lo" {
		t.Fatalf("refusing to run outside a fresh network namespace: %v %v", ifaces, err)
	}
	loopbackMulticast(t)
	hubBin, workerBin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	h := start(t, ctx, "hub", hubBin, "--model", "lenet5", "--data", "mnist", "--min-workers", "1", "--batch", "32",
		"--iterations", "5", "--listen", "/ip4/127.0.0.1/tcp/0", "--session", "netns-test", "--json", "--out", filepath.Join(dir, "hub"))
	h.until(t, "listening", 30*time.Second)
	w := start(t, ctx, "worker", workerBin, "--session", "netns-test", "--data", "mnist", "--shard", "0/1",
		"--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(dir, "w"))
	hubDone := h.until(t, "done", time.Minute)
	wDone := w.until(t, "done", 30*time.Second)
	if hubDone["weights_sha256"] != wDone["weights_sha256"] || wDone["iterations"].(float64) != 5 {
		t.Errorf("hub %v, worker %v", hubDone, wDone)
	}
}

// loopbackMulticast brings lo up with MULTICAST (a fresh namespace has it
// down, and Linux's lo lacks the flag).
func loopbackMulticast(t *testing.T) {
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
		t.Fatal(err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_MULTICAST)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatal(err)
	}
}

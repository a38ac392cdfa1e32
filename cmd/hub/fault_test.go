package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/libp2p/go-libp2p/core/peer"
)

// The fault tests run a real hub and real workers as processes on loopback
// and hurt them: SIGKILL, SIGINT, SIGTERM, a slow device, a wrong key, a
// stranger. Each is short (lenet5, small batches, 60-200 iterations).

// faultHub starts a hub with the flags every fault test shares and extra.
func faultHub(t *testing.T, ctx context.Context, name, dir, listen string, extra ...string) *proc {
	hubBin, _ := buildBinaries(t)
	args := []string{"--model", "lenet5", "--data", "mnist", "--listen", listen, "--mdns=false", "--json",
		"--out", dir, "--log-every", "1", "--tick", "20ms", "--deadline", "2s"}
	return start(t, ctx, name, hubBin, append(args, extra...)...)
}

// faultWorker starts worker i of n on the hub at addr; extra may repeat a
// flag to override it.
func faultWorker(t *testing.T, ctx context.Context, name, addr, dir string, i, n int, extra ...string) *proc {
	_, workerBin := buildBinaries(t)
	args := []string{"--hub", addr, "--data", "mnist", "--shard", fmt.Sprintf("%d/%d", i, n),
		"--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--log-every", "1", "--out", filepath.Join(dir, name),
		"--identity", filepath.Join(dir, name+".key")}
	return start(t, ctx, name, workerBin, append(args, extra...)...)
}

// progress reads p's events until a "progress" event at iteration >= k,
// recording every progress iteration in seen (when not nil).
func (p *proc) progressTo(t *testing.T, k float64, seen map[float64]int, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				t.Fatalf("%s ended before iteration %v", p.name, k)
			}
			if ev["event"] != "progress" {
				continue
			}
			it := ev["iteration"].(float64)
			if seen != nil {
				seen[it]++
			}
			if it >= k {
				return ev
			}
		case <-deadline:
			t.Fatalf("%s: not at iteration %v within %v", p.name, k, timeout)
		}
	}
}

// untilSeen is until, counting the progress events it passes in seen.
func (p *proc) untilSeen(t *testing.T, kind string, seen map[float64]int, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				t.Fatalf("%s ended before a %q event", p.name, kind)
			}
			if ev["event"] == "progress" && seen != nil {
				seen[ev["iteration"].(float64)]++
			}
			if ev["event"] == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("%s: no %q event within %v", p.name, kind, timeout)
		}
	}
}

// exit waits for p to exit and returns its exit code.
func (p *proc) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	for range p.events { // drain: the reader closes events before done
	}
	select {
	case err := <-p.done:
		if err == nil {
			return 0
		}
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			return ee.ExitCode()
		}
		t.Fatalf("%s: %v", p.name, err)
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	return -1
}

func at(ev map[string]any) time.Time { return ev["_received"].(time.Time) }

// rejoin measures how long a worker takes from its connection to its first
// push: the issue asks for at most 2 s.
func rejoin(t *testing.T, w *proc) time.Duration {
	t.Helper()
	c := w.until(t, "connected", 30*time.Second)
	p := w.until(t, "progress", 30*time.Second)
	d := at(p).Sub(at(c))
	if d > 2*time.Second {
		t.Errorf("%s trained again %v after connecting, want at most 2s", w.name, d)
	}
	return d
}

// sameWeights checks that every worker's done event has the hub's weights
// and iteration count, and exit code 0.
func sameWeights(t *testing.T, hubDone map[string]any, ws ...*proc) {
	t.Helper()
	for _, w := range ws {
		done := w.until(t, "done", time.Minute)
		if done["weights_sha256"] != hubDone["weights_sha256"] || done["iterations"] != hubDone["iterations"] {
			t.Errorf("%s: %v at %v, hub %v at %v", w.name, done["weights_sha256"], done["iterations"],
				hubDone["weights_sha256"], hubDone["iterations"])
		}
		if code := w.exit(t, 30*time.Second); code != 0 {
			t.Errorf("%s exited %d", w.name, code)
		}
	}
}

// TestFaultWorkerKilledAndBack: a worker SIGKILLed mid-iteration is dropped
// when its connection dies and the run carries on without it; the same
// worker restarted (same identity) and a new one are training again within
// 2 s of connecting; the run ends at exactly its iteration count with
// every live worker holding the hub's weights, every iteration merged once.
func TestFaultWorkerKilledAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const iters = 160
	h := faultHub(t, ctx, "hub", filepath.Join(dir, "hub"), "/ip4/127.0.0.1/tcp/0", "--min-workers", "3",
		"--batch", "48", "--iterations", fmt.Sprint(iters), "--policy", "fixed")
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	var ws []*proc
	for i := range 3 {
		ws = append(ws, faultWorker(t, ctx, fmt.Sprint("w", i), addr, dir, i, 3))
	}
	seen := map[float64]int{}
	h.progressTo(t, 30, seen, time.Minute)
	ws[2].cmd.Process.Signal(syscall.SIGKILL)
	killedAt := h.progressTo(t, 0, seen, time.Minute)["iteration"].(float64)
	h.progressTo(t, killedAt+10, seen, 30*time.Second) // it goes on without w2

	back := faultWorker(t, ctx, "w2", addr, dir, 2, 3) // same identity file
	t.Logf("killed w2 at iteration %v; restarted with its identity: training again %v after connecting", killedAt, rejoin(t, back))
	fresh := faultWorker(t, ctx, "w3", addr, dir, 2, 3)
	t.Logf("a new worker: training %v after connecting", rejoin(t, fresh))

	hubDone := h.untilSeen(t, "done", seen, 2*time.Minute)
	if hubDone["iterations"].(float64) != iters {
		t.Fatalf("hub ended at %v iterations, want %d", hubDone["iterations"], iters)
	}
	for it := 1.0; it <= iters; it++ {
		if seen[it] != 1 {
			t.Fatalf("iteration %v merged %d times, want once each", it, seen[it])
		}
	}
	sameWeights(t, hubDone, ws[0], ws[1], back, fresh)
}

// TestFaultSlowWorker: a worker 10× slower than the others never stalls
// the run: the adaptive policy gives it a small share, the iterations do
// not wait for a full share of it, and it stays in sync.
func TestFaultSlowWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const iters, batch = 60, 96
	h := faultHub(t, ctx, "hub", filepath.Join(dir, "hub"), "/ip4/127.0.0.1/tcp/0", "--min-workers", "3",
		"--batch", fmt.Sprint(batch), "--iterations", fmt.Sprint(iters), "--policy", "adaptive")
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	var ws []*proc
	for i := range 3 {
		var extra []string
		if i == 2 {
			extra = []string{"--slowdown", "10"}
		}
		ws = append(ws, faultWorker(t, ctx, fmt.Sprint("w", i), addr, dir, i, 3, extra...))
	}
	slowID := ws[2].until(t, "welcomed", time.Minute)["peer"].(string)
	last := h.progressTo(t, iters-1, nil, 2*time.Minute) // the last Merged has no batches
	hubDone := h.until(t, "done", time.Minute)
	slowBatch := -1.0
	for _, w := range last["workers"].([]any) {
		w := w.(map[string]any)
		if strings.HasSuffix(slowID, strings.TrimPrefix(w["id"].(string), "…")) {
			slowBatch = w["batch"].(float64)
		}
	}
	t.Logf("slow worker's batch at the end: %v of %d (equal share %d); run %.1fs, %.0f samples/s",
		slowBatch, batch, batch/3, hubDone["seconds"], hubDone["samples_per_sec"])
	if slowBatch < 0 || slowBatch > batch/6 {
		t.Errorf("the 10× slower worker has batch %v at the end, want at most %d (half an equal share)", slowBatch, batch/6)
	}
	sameWeights(t, hubDone, ws...)
}

// freeListen returns a loopback TCP multiaddr with a port free now, for a
// hub that must come back on the same address.
func freeListen(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", l.Addr().(*net.TCPAddr).Port)
}

// TestFaultHubKilledAndResumed: the hub is SIGKILLed mid-run and restarted
// with --resume on the same address: it continues from its last
// checkpoint, the workers reconnect on their own, and the final model is
// as good as an uninterrupted run's.
func TestFaultHubKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const iters = 200
	common := []string{"--min-workers", "2", "--batch", "64", "--iterations", fmt.Sprint(iters),
		"--policy", "fixed", "--checkpoint-every", "20"}

	// The uninterrupted run, for the accuracy to match.
	ref := faultHub(t, ctx, "reference hub", filepath.Join(dir, "ref"), "/ip4/127.0.0.1/tcp/0", common...)
	refAddr := ref.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	for i := range 2 {
		faultWorker(t, ctx, fmt.Sprint("ref", i), refAddr, dir, i, 2)
	}
	refDone := ref.until(t, "done", 2*time.Minute)

	listen, out := freeListen(t), filepath.Join(dir, "hub")
	h := faultHub(t, ctx, "hub", out, listen, common...)
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	var ws []*proc
	for i := range 2 {
		ws = append(ws, faultWorker(t, ctx, fmt.Sprint("w", i), addr, dir, i, 2))
	}
	killedAt := h.progressTo(t, 70, nil, time.Minute)["iteration"].(float64)
	h.cmd.Process.Signal(syscall.SIGKILL)
	for ev := range h.events { // what it printed before it died
		if ev["event"] == "progress" {
			killedAt = max(killedAt, ev["iteration"].(float64))
		}
	}
	h.exit(t, 10*time.Second)

	h2 := faultHub(t, ctx, "resumed hub", out, listen, append(common, "--resume")...)
	resumed := h2.until(t, "resumed", 30*time.Second)["iteration"].(float64)
	if got := h2.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string); got != addr {
		t.Fatalf("the resumed hub is at %s, was %s: workers cannot find it", got, addr)
	}
	if want := math.Floor(killedAt/20) * 20; resumed != want {
		t.Errorf("resumed at iteration %v, want the last checkpoint before %v (%v)", resumed, killedAt, want)
	}
	for _, w := range ws {
		c := w.until(t, "connected", time.Minute) // the first connection's
		if c["reconnect"].(float64) != 0 {
			t.Fatalf("%s: first connection event %v", w.name, c)
		}
		c = w.until(t, "connected", time.Minute)
		t.Logf("%s reconnected (event %v)", w.name, c["reconnect"])
	}
	hubDone := h2.until(t, "done", 2*time.Minute)
	sameWeights(t, hubDone, ws...)
	acc, refAcc := hubDone["test_accuracy"].(float64), refDone["test_accuracy"].(float64)
	t.Logf("killed at %v, resumed at %v: test accuracy %.4f, uninterrupted %.4f", killedAt, resumed, acc, refAcc)
	if hubDone["iterations"].(float64) != iters || math.Abs(acc-refAcc) > 0.005 {
		t.Errorf("resumed run: %v iterations, accuracy %.4f; uninterrupted %.4f (want within 0.5 points)",
			hubDone["iterations"], acc, refAcc)
	}
}

// TestFaultSignals: SIGINT makes a worker leave cleanly (Goodbye, exit 0)
// while the run goes on; SIGTERM makes the hub say goodbye to every
// worker with the final weights, which they save, and save its own weights
// and checkpoint.
func TestFaultSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out := filepath.Join(dir, "hub")
	h := faultHub(t, ctx, "hub", out, "/ip4/127.0.0.1/tcp/0", "--min-workers", "3", "--batch", "48",
		"--iterations", "100000", "--schedule", "constant", "--checkpoint-every", "0")
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	var ws []*proc
	for i := range 3 {
		ws = append(ws, faultWorker(t, ctx, fmt.Sprint("w", i), addr, dir, i, 3))
	}
	h.progressTo(t, 15, nil, time.Minute)
	ws[2].cmd.Process.Signal(syscall.SIGINT)
	if code := ws[2].exit(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exited %d after SIGINT, want 0", code)
	}
	after := h.progressTo(t, 0, nil, 10*time.Second)["iteration"].(float64)
	h.progressTo(t, after+10, nil, 30*time.Second) // the run goes on with two
	h.cmd.Process.Signal(syscall.SIGTERM)
	hubDone := h.until(t, "done", time.Minute)
	sameWeights(t, hubDone, ws[0], ws[1])
	if code := h.exit(t, 30*time.Second); code != 0 {
		t.Errorf("hub exited %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(h.stderr.String(), "goodbye: the worker was stopped") {
		t.Errorf("the hub did not log the SIGINTed worker's goodbye")
	}
	f, err := models.LoadFile(filepath.Join(out, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.MetaValue("iteration"); got != fmt.Sprint(hubDone["iterations"]) {
		t.Errorf("checkpoint at iteration %s, the hub stopped at %v", got, hubDone["iterations"])
	}
	if _, err := os.Stat(hubDone["weights"].(string)); err != nil {
		t.Errorf("hub weights: %v", err)
	}
}

// TestFaultWrongKeyAndStranger: in a private network with an allowlist, a
// worker with the wrong key exits non-zero within 30 s saying the key did
// not match, a worker with the key but off the allowlist exits non-zero
// showing the hub's refusal, and the run finishes with the allowed worker.
func TestFaultWrongKeyAndStranger(t *testing.T) {
	if testing.Short() {
		t.Skip("process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keyA, keyB := filepath.Join(dir, "a.key"), filepath.Join(dir, "b.key")
	for _, path := range []string{keyA, keyB} {
		psk, err := p2p.GeneratePSK(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if err := p2p.SavePSK(path, psk); err != nil {
			t.Fatal(err)
		}
	}
	k, err := p2p.LoadOrCreateIdentity(filepath.Join(dir, "good.key"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	allow := filepath.Join(dir, "allow.txt")
	if err := os.WriteFile(allow, []byte("# the one phone\n"+id.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := faultHub(t, ctx, "hub", filepath.Join(dir, "hub"), "/ip4/127.0.0.1/tcp/0", "--min-workers", "1",
		"--batch", "32", "--iterations", "300", "--psk", keyA, "--allow", allow)
	addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
	good := faultWorker(t, ctx, "good", addr, dir, 0, 1, "--psk", keyA)
	good.until(t, "progress", time.Minute)

	cases := []struct {
		name, key, want string
	}{
		{"wrongkey", keyB, "swarm key"},
		{"stranger", keyA, "allowlist"},
	}
	began := time.Now() // both at once, while the run goes on
	var strangers []*proc
	for _, c := range cases {
		strangers = append(strangers, faultWorker(t, ctx, c.name, addr, dir, 0, 1, "--psk", c.key))
	}
	for i, c := range cases {
		w := strangers[i]
		code := w.exit(t, 30*time.Second)
		took := time.Since(began)
		msg := w.stderr.String()
		t.Logf("%s: exit %d after %v: %s", c.name, code, took.Round(time.Millisecond), strings.TrimSpace(tail(msg, 300)))
		if code == 0 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want non-zero and a message about the %s", c.name, code, msg, c.want)
		}
	}
	hubDone := h.until(t, "done", 2*time.Minute)
	if hubDone["iterations"].(float64) != 300 {
		t.Errorf("hub ended at %v iterations, want 300", hubDone["iterations"])
	}
	sameWeights(t, hubDone, good)
	if hubDone["refused"].(float64) < 1 {
		t.Errorf("the hub counted %v refused inputs, want the stranger's", hubDone["refused"])
	}
	if !strings.Contains(h.stderr.String(), "peer not on the allowlist") {
		t.Errorf("the hub did not log the stranger's refusal")
	}
}

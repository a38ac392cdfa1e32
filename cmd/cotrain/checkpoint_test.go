package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// asCLI makes the test binary run cotrain's main when set, so the process
// tests interrupt the real command without building it.
const asCLI = "COTRAIN_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writeIDX writes a synthetic MNIST-shaped data set to dir: n training and
// 200 test images of seeded noise, labels a function of the pixels, so
// that training has something to learn.
func writeIDX(t *testing.T, dir string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	write := func(images, labels string, n int) {
		img := binary.BigEndian.AppendUint32(nil, 0x803)
		img = binary.BigEndian.AppendUint32(img, uint32(n))
		img = binary.BigEndian.AppendUint32(img, 28)
		img = binary.BigEndian.AppendUint32(img, 28)
		lab := binary.BigEndian.AppendUint32(nil, 0x801)
		lab = binary.BigEndian.AppendUint32(lab, uint32(n))
		for range n {
			class := r.IntN(10)
			for p := range 28 * 28 {
				v := r.IntN(128)
				if p/28 >= class*2 && p/28 < class*2+6 { // a band whose row says the class
					v += 127
				}
				img = append(img, byte(v))
			}
			lab = append(lab, byte(class))
		}
		if err := os.WriteFile(filepath.Join(dir, images), img, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, labels), lab, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train-images-idx3-ubyte", "train-labels-idx1-ubyte", n)
	write("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 200)
}

// proc is a cotrain process started from the test binary, with its JSON
// lines.
type proc struct {
	cmd    *exec.Cmd
	events chan map[string]any
	stderr bytes.Buffer
	done   chan struct{}
}

func startCLI(t *testing.T, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	p := &proc{cmd: cmd, events: make(chan map[string]any, 4096), done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				p.events <- ev
			}
		}
	}()
	return p
}

// until returns the first event for which ok holds, failing the test if
// the process ends first.
func (p *proc) until(t *testing.T, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	for ev := range p.events {
		if ok(ev) {
			return ev
		}
	}
	p.cmd.Wait()
	t.Fatalf("cotrain ended before %s\nstderr: %s", what, p.stderr.String())
	return nil
}

// wait drains the events and returns the last one and the exit code.
func (p *proc) wait(t *testing.T) (last map[string]any, all []map[string]any, code int) {
	t.Helper()
	for ev := range p.events {
		all = append(all, ev)
		last = ev
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	default:
		t.Fatal(err)
	}
	return last, all, code
}

func event(kind string) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["event"] == kind }
}

func progressAt(n float64) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["event"] == "progress" && ev["iteration"].(float64) >= n }
}

func find(all []map[string]any, kind string) map[string]any {
	for _, ev := range all {
		if ev["event"] == kind {
			return ev
		}
	}
	return nil
}

// The bar: a real `cotrain train` process interrupted mid-epoch
// (SIGINT, SIGTERM, and SIGKILL between checkpoints and in the middle of
// one) and resumed ends with the weights an uninterrupted run ends with,
// bit for bit. 2,080 synthetic samples in batches of 16 make epochs of 130
// steps; the signals come at steps 100 and 200, mid-epoch, and the resumed
// runs cross the epoch boundary.
func TestInterruptedTrainResumesToTheSameWeights(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	os.Mkdir(dataDir, 0o755)
	writeIDX(t, dataDir, 2080)
	const total = 260 // two epochs
	args := func(out string, more ...string) []string {
		return append([]string{"train", "--model", "lenet5", "--data", dataDir, "--epochs", "2", "--batch", "16",
			"--seed", "11", "--lr", "0.02", "--json", "--out", filepath.Join(dir, out)}, more...)
	}

	ref, _ := cotrain(t, args("ref")...)
	want := ref["weights_sha256"]
	if ref["iterations"].(float64) != total {
		t.Fatalf("reference run: %v", ref)
	}

	// SIGINT at about step 100, with no periodic checkpoint: the one the
	// interrupt writes is all there is.
	p := startCLI(t, args("int", "--checkpoint-every", "0")...)
	p.until(t, "step 100", progressAt(100))
	p.cmd.Process.Signal(os.Interrupt)
	last, _, code := p.wait(t)
	if code != 130 || last["event"] != "interrupted" {
		t.Fatalf("after SIGINT: exit %d, last event %v, want 130 and interrupted\nstderr: %s", code, last, p.stderr.String())
	}
	at := last["iteration"].(float64)
	ck, err := models.LoadFile(filepath.Join(dir, "int", trainCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	if ck.MetaValue("iteration") != strconv.Itoa(int(at)) || ck.MetaValue("pos") == "0" || at >= total {
		t.Fatalf("checkpoint at iteration %s, position %s of epoch %s; the interrupt came at %v: want mid-epoch",
			ck.MetaValue("iteration"), ck.MetaValue("pos"), ck.MetaValue("epoch"), at)
	}
	t.Logf("SIGINT stopped the run at step %v (epoch %s, sample %s)", at, ck.MetaValue("epoch"), ck.MetaValue("pos"))
	done, all, code := startCLI(t, args("int", "--resume")...).wait(t)
	if code != 0 || find(all, "resume")["iteration"] != at {
		t.Fatalf("resume: exit %d, events %v", code, all)
	}
	if done["weights_sha256"] != want {
		t.Errorf("interrupted at %v and resumed: weights %v, uninterrupted %v", at, done["weights_sha256"], want)
	}
	if _, err := os.Stat(filepath.Join(dir, "int", trainCheckpointName)); !os.IsNotExist(err) {
		t.Errorf("the finished run left its checkpoint: %v", err)
	}

	// SIGKILL between checkpoints (every 30 steps): the work since the
	// last one is lost and done again.
	p = startCLI(t, args("kill", "--checkpoint-every", "30")...)
	p.until(t, "step 100", progressAt(100))
	p.cmd.Process.Kill()
	if _, _, code := p.wait(t); code != 137 {
		t.Fatalf("SIGKILL: exit %d", code)
	}
	done, all, code = startCLI(t, args("kill", "--checkpoint-every", "30", "--resume")...).wait(t)
	from := find(all, "resume")["iteration"].(float64)
	if code != 0 || int(from)%30 != 0 || from < 90 {
		t.Fatalf("resume after SIGKILL: exit %d, resumed at %v, want a multiple of 30 from 90 on", code, from)
	}
	if done["weights_sha256"] != want {
		t.Errorf("killed, resumed at %v: weights %v, uninterrupted %v", from, done["weights_sha256"], want)
	}

	// A checkpoint every step, so that SIGKILL most likely lands in the
	// middle of writing one; then SIGTERM on the resumed run, and a second
	// resume.
	p = startCLI(t, args("every", "--checkpoint-every", "1")...)
	p.until(t, "step 100", progressAt(100))
	p.cmd.Process.Kill()
	p.wait(t)
	p = startCLI(t, args("every", "--checkpoint-every", "1", "--resume")...)
	first := p.until(t, "resume", event("resume"))["iteration"].(float64)
	p.until(t, "step 200", progressAt(200))
	p.cmd.Process.Signal(syscall.SIGTERM)
	last, _, code = p.wait(t)
	if code != 143 || last["event"] != "interrupted" {
		t.Fatalf("after SIGTERM: exit %d, last event %v, want 143 and interrupted", code, last)
	}
	done, all, code = startCLI(t, args("every", "--resume")...).wait(t)
	if code != 0 || done["weights_sha256"] != want {
		t.Errorf("killed, resumed at %v, terminated at %v, resumed: exit %d, weights %v, uninterrupted %v",
			first, last["iteration"], code, done["weights_sha256"], want)
	}
	if stale, _ := filepath.Glob(filepath.Join(dir, "every", ".*tmp*")); len(stale) > 0 {
		t.Errorf("temporary files left: %v", stale)
	}
}

// A kill in the middle of a checkpoint leaves its temporary file, never a
// half-written checkpoint: the previous one still loads, and the resume
// clears the leftovers.
func TestResumeAfterAKillMidWrite(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, 300)
	out := filepath.Join(dir, "out")
	args := []string{"train", "--model", "lenet5", "--data", dir, "--iterations", "30",
		"--batch", "8", "--json", "--out", out}
	ref, _ := cotrain(t, append(args, "--out", filepath.Join(dir, "ref"))...)

	// Stop at step 10 (the context ends there), keeping the checkpoint.
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	stop := &cancelAt{w: &stdout, at: `"iteration":10,`, cancel: cancel}
	err := run(ctx, append(args, "--checkpoint-every", "10"), stop, &stderr)
	var ie *interruptedError
	if !errors.As(err, &ie) || ie.iter < 10 {
		t.Fatalf("cancelled run: %v", err)
	}
	path := filepath.Join(out, trainCheckpointName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// What a kill during the next save leaves: half of a temporary file.
	os.WriteFile(filepath.Join(out, "."+trainCheckpointName+".tmp123"), good[:len(good)/2], 0o600)
	done, _ := cotrain(t, append(args, "--resume")...)
	if done["weights_sha256"] != ref["weights_sha256"] {
		t.Errorf("resumed: %v, uninterrupted: %v", done["weights_sha256"], ref["weights_sha256"])
	}
	if stale, _ := filepath.Glob(filepath.Join(out, ".*tmp*")); len(stale) > 0 {
		t.Errorf("temporary files left: %v", stale)
	}
}

// cancelAt passes writes to w and cancels when one contains at: the
// in-process stand-in for a signal at a known step.
type cancelAt struct {
	w      *bytes.Buffer
	at     string
	cancel func()
}

func (c *cancelAt) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.at)) {
		c.cancel()
	}
	return c.w.Write(p)
}

func TestResumeRefusals(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, 300)
	out := filepath.Join(dir, "out")
	base := []string{"train", "--model", "lenet5", "--data", dir, "--classes", "0-1", "--iterations", "20",
		"--batch", "8", "--json", "--out", out}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var sink bytes.Buffer
	if err := run(ctx, base, &sink, &sink); !errors.As(err, new(*interruptedError)) {
		t.Fatalf("cancelled before the first step: %v", err)
	}
	path := filepath.Join(out, trainCheckpointName)
	for _, tc := range []struct {
		name  string
		args  []string
		setup func()
		want  string
	}{
		{"other batch", []string{"--batch", "16"}, nil, `--batch "8", this run has "16"`},
		{"other seed", []string{"--seed", "2"}, nil, `--seed "1", this run has "2"`},
		{"other data", []string{"--classes", "0-2"}, nil, "classes"},
		{"other model", []string{"--model", "lenet-caffe"}, nil, "lenet5"},
		{"no checkpoint", []string{"--out", filepath.Join(dir, "none")}, nil, "no checkpoint"},
		{"negative period", []string{"--checkpoint-every", "-1"}, nil, "--checkpoint-every -1"},
		{"corrupt", nil, func() {
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 1
			os.WriteFile(path, b, 0o600)
		}, "corrupt"},
		{"not a checkpoint", []string{"--out", filepath.Join(dir, "w")}, func() {
			cotrain(t, "train", "--data", dir, "--classes", "0-1", "--iterations", "1", "--batch", "8", "--json",
				"--out", filepath.Join(dir, "w"))
			os.Rename(filepath.Join(dir, "w", "weights.ctw"), filepath.Join(dir, "w", trainCheckpointName))
		}, "not a train checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			var o, e bytes.Buffer
			err := run(context.Background(), append(append(append([]string{}, base...), "--resume"), tc.args...), &o, &e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The dropout generator continues where it was: a restored PCG draws what
// the saved one would have drawn next.
func TestCheckpointKeepsTheDropoutGenerator(t *testing.T) {
	dir := t.TempDir()
	c := trainConfig{model: "lenet5", out: dir, seed: 1}
	k, tr, load := testCheckpointer(t, c)
	for range 17 {
		k.drop.Uint64()
	}
	tr.Iter = 3
	load.Seek(1, 5)
	if err := k.save(0.25, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	var next [4]uint64
	for i := range next {
		next[i] = k.drop.Uint64()
	}
	k2, tr2, load2 := testCheckpointer(t, c)
	smooth, curve, warn, err := k2.restore(10)
	if err != nil || warn != "" {
		t.Fatal(err, warn)
	}
	if smooth != 0.25 || fmt.Sprint(curve) != "[1 2 3]" || tr2.Iter != 3 || load2.Epoch() != 1 || load2.Pos() != 5 {
		t.Errorf("restored smooth %v, curve %v, iteration %d, epoch %d, position %d", smooth, curve, tr2.Iter, load2.Epoch(), load2.Pos())
	}
	for i, want := range next {
		if got := k2.drop.Uint64(); got != want {
			t.Fatalf("draw %d after restore: %x, the saved generator's next: %x", i, got, want)
		}
	}
	// Without the curve's file the run goes on, with a note.
	os.Remove(filepath.Join(dir, trainCurveName))
	k3, _, _ := testCheckpointer(t, c)
	if _, curve, warn, err := k3.restore(10); err != nil || curve != nil || !strings.Contains(warn, "first 3 steps") {
		t.Errorf("no curve file: curve %v, note %q, error %v", curve, warn, err)
	}
}

// testCheckpointer returns a checkpointer of a fresh lenet5 run c over 20
// blank images, and its trainer and loader.
func testCheckpointer(t testing.TB, c trainConfig) (*checkpointer, *solver.Trainer, *data.Loader) {
	t.Helper()
	b := cpu.NewCPU()
	spec, _ := models.Lookup(c.model)
	mcfg := spec.Resolve(models.Config{})
	net, err := models.Build(b, c.model, mcfg)
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(c.seed, 0x1217)))
	drop := rand.NewPCG(c.seed, 0xd40)
	net.SetRand(rand.New(drop))
	opt := solver.NewSGD(b, net.NumParams(), 0.9, 0, false)
	tr := solver.NewTrainer(net, opt, solver.Constant(0.1))
	ds, err := data.NewImages(make([]uint8, 20*28*28), make([]int32, 20), 1, 28, 28, 10, []float32{0}, []float32{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	load := data.NewLoader(ds, 4, c.seed, true)
	k, err := newCheckpointer(c, c.model, mcfg, tr, load, drop, 10, ds.Len())
	if err != nil {
		t.Fatal(err)
	}
	return k, tr, load
}

// BenchmarkCheckpoint puts one checkpoint of lenet5 (weights, SGD momentum,
// curve of 1,000 steps, fsyncs) next to one training step of batch 64, to
// weigh --checkpoint-every's default: a save every 500 steps costs the run
// save/(500·step).
func BenchmarkCheckpoint(b *testing.B) {
	k, tr, _ := testCheckpointer(b, trainConfig{model: "lenet5", out: b.TempDir(), seed: 1})
	curve := make([]float64, 1000)
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			if err := k.save(0.5, curve); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("step-64", func(b *testing.B) {
		x := make([]float32, 64*28*28)
		labels := make([]int32, 64)
		for b.Loop() {
			if _, err := tr.Step(x, labels); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// finetune resumes as train does, and refuses a starting weight file that
// changed since the checkpoint.
func TestFinetuneResumes(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, 300)
	cotrain(t, "train", "--data", dir, "--iterations", "5", "--batch", "8", "--json", "--out", filepath.Join(dir, "base"))
	w := filepath.Join(dir, "base", "weights.ctw")
	args := []string{"finetune", "--weights", w, "--data", dir, "--train-last", "2", "--epochs", "2", "--batch", "16",
		"--json", "--checkpoint-every", "7"}
	ref, _ := cotrain(t, append(args, "--out", filepath.Join(dir, "ref"))...)

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	out := filepath.Join(dir, "ft")
	err := run(ctx, append(args, "--out", out), &cancelAt{w: &stdout, at: `"iteration":21,`, cancel: cancel}, &stderr)
	var ie *interruptedError
	if !errors.As(err, &ie) || ie.iter < 21 || ie.iter >= 38 {
		t.Fatalf("cancelled finetune: %v (want a stop at step 21 or soon after, of 38)", err)
	}
	done, _ := cotrain(t, append(args, "--out", out, "--resume")...)
	if done["weights_sha256"] != ref["weights_sha256"] {
		t.Errorf("finetune stopped at %d and resumed: %v, uninterrupted: %v", ie.iter, done["weights_sha256"], ref["weights_sha256"])
	}

	// The base weights change under an interrupted run: refused.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	run(ctx, append(args, "--out", out), &stdout, &stderr)
	cotrain(t, "train", "--data", dir, "--iterations", "6", "--batch", "8", "--json", "--out", filepath.Join(dir, "base"))
	if err := run(context.Background(), append(args, "--out", out, "--resume"), &stdout, &stderr); err == nil ||
		!strings.Contains(err.Error(), "weights_sha256") {
		t.Errorf("resume after the base weights changed: %v, want a refusal naming weights_sha256", err)
	}
}

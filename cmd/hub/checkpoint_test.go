package main

import (
	crand "crypto/rand"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/p2p"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/libp2p/go-libp2p/core/peer"
)

// lenetTrainer returns a lenet5 trainer with the named optimizer that has
// taken steps steps on random data.
func lenetTrainer(t *testing.T, opt string, steps int, seed uint64) *solver.Trainer {
	t.Helper()
	b := cpu.NewCPU()
	net, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(seed, 1)))
	o, err := solver.NewOptimizer(b, opt, net.NumParams(), 0.9, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(net, o, solver.Constant(0.01))
	r := rand.New(rand.NewPCG(seed, 2))
	x, labels := make([]float32, 4*28*28), make([]int32, 4)
	for range steps {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range labels {
			labels[i] = int32(r.IntN(10))
		}
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func optState(tr *solver.Trainer) []float32 {
	bufs, _ := tr.Opt.State()
	var out []float32
	for _, name := range []string{"m", "v", "velocity"} {
		if b, ok := bufs[name]; ok {
			v := make([]float32, b.Len())
			tr.Net.B.Download(v, b)
			out = append(out, v...)
		}
	}
	return out
}

// TestCheckpointRoundTrip: a resumed trainer holds the weights, optimizer
// state and iteration of the saved one, and its next step is bit-identical.
func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a := lenetTrainer(t, "adam", 3, 1)
	if _, err := saveCheckpoint(dir, "lenet5", models.Config{}, nil, a, 300); err != nil {
		t.Fatal(err)
	}
	b := lenetTrainer(t, "adam", 0, 2)
	iter, planned, err := loadCheckpoint(dir, "lenet5", b)
	if err != nil {
		t.Fatal(err)
	}
	if iter != 3 || b.Iter != 3 || planned != 300 {
		t.Fatalf("resumed at %d (trainer %d) of %d, want 3 of 300", iter, b.Iter, planned)
	}
	if state.NetHash(a.Net) != state.NetHash(b.Net) || !slices.Equal(optState(a), optState(b)) {
		t.Fatal("weights or optimizer state differ after the round trip")
	}
	if _, steps := b.Opt.State(); steps != 3 {
		t.Fatalf("optimizer steps %d, want 3", steps)
	}
	grads := make([]float32, a.Net.NumParams())
	for i := range grads {
		grads[i] = float32(i%11-5) / 100
	}
	for _, tr := range []*solver.Trainer{a, b} {
		tr.Net.B.Upload(tr.Net.Grads, grads)
		tr.Apply()
	}
	if state.NetHash(a.Net) != state.NetHash(b.Net) {
		t.Fatal("the step after resuming differs from the uninterrupted one")
	}
}

// TestCheckpointRefusals: a checkpoint that cannot be resumed is refused
// with an error naming the file and the fault, and the trainer is untouched.
func TestCheckpointRefusals(t *testing.T) {
	src := t.TempDir()
	if _, err := saveCheckpoint(src, "lenet5", models.Config{}, nil, lenetTrainer(t, "adam", 1, 1), 10); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(src, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(dir string)
		opt   string
		want  string
	}{
		{"missing", func(string) {}, "adam", "no such file"},
		{"truncated", func(d string) { write(t, d, good[:len(good)/2]) }, "adam", "hub.ckpt"},
		{"empty", func(d string) { write(t, d, nil) }, "adam", "hub.ckpt"},
		{"corrupt magic", func(d string) { b := slices.Clone(good); b[0] ^= 0xff; write(t, d, b) }, "adam", "hub.ckpt"},
		{"another optimizer", func(d string) { write(t, d, good) }, "sgd", "optimizer"},
		{"final weights, not a checkpoint", func(d string) {
			if _, _, err := cli.SaveFinal(d, "lenet5", models.Config{}, nil, lenetTrainer(t, "adam", 0, 1).Net, 5); err != nil {
				t.Fatal(err)
			}
			os.Rename(filepath.Join(d, "weights.ctw"), filepath.Join(d, checkpointName))
		}, "adam", "not a hub checkpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(dir)
			tr := lenetTrainer(t, c.opt, 0, 3)
			before := state.NetHash(tr.Net)
			_, _, err := loadCheckpoint(dir, "lenet5", tr)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--resume") {
				t.Fatalf("error %v, want one about --resume mentioning %q", err, c.want)
			}
			if state.NetHash(tr.Net) != before || tr.Iter != 0 {
				t.Fatal("a refused checkpoint changed the trainer")
			}
		})
	}
	if _, _, err := loadCheckpoint(src, "lenet-caffe", lenetTrainer(t, "adam", 0, 3)); err == nil || !strings.Contains(err.Error(), "lenet5") {
		t.Fatalf("a checkpoint of another model: %v", err)
	}
}

func write(t *testing.T, dir string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, checkpointName), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadAllow(t *testing.T) {
	var ids []string
	for range 2 {
		k, err := p2p.GenerateIdentity(crand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id.String())
	}
	cases := []struct {
		name, text string
		want       []string
		err        string
	}{
		{"ids, comments, blanks", "# phones\n" + ids[0] + "  # Pixel\n\n  " + ids[1] + "\n", ids, ""},
		{"empty file allows nobody", "# nobody yet\n", nil, ""},
		{"typo", ids[0] + "\nQmNotAPeer\n", nil, "allow.txt:2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "allow.txt")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := loadAllow(path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || got == nil || len(got) != len(c.want) {
				t.Fatalf("allow %v, %v; want %v", got, err, c.want)
			}
			for _, id := range c.want {
				if !got[id] {
					t.Errorf("%s missing", id)
				}
			}
		})
	}
	if _, err := loadAllow(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a missing allowlist was accepted")
	}
}

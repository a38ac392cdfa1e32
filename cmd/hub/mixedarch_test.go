package main

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// armWorkers builds cmd/worker for linux/arm64 and for 32-bit linux/arm
// (GOARM=7), pure Go (CGO off), as phones run it.
func armWorkers(t *testing.T) (arm64, arm string) {
	t.Helper()
	dir := t.TempDir()
	arm64, arm = filepath.Join(dir, "worker-arm64"), filepath.Join(dir, "worker-arm")
	for _, b := range []struct{ out, goarch string }{{arm64, "arm64"}, {arm, "arm"}} {
		cmd := exec.Command("go", "build", "-o", b.out, "github.com/cotrain/cotrain/cmd/worker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+b.goarch, "GOARM=7")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build for linux/%s: %v\n%s", b.goarch, err, out)
		}
	}
	return arm64, arm
}

// TestMixedArchitectureSession is a session of phones and a laptop: a hub
// and a worker built for this machine, a worker built for 64-bit ARM
// (run by qemu-aarch64) and one built for 32-bit ARMv7 (run by qemu-arm),
// over loopback. For SGD with top-k compression, Adam with fp16
// compression, and a model with batch norm (MobileNet, whose running
// statistics travel too), every node must end with the hub's weights hash
// and none may ever have found its weights differing from the hub's on the
// way (mismatches 0: the final weights come from the hub's Goodbye, so
// only the mismatch count shows that the three architectures computed the
// same bits at every step). Kept small for CI: qemu runs the ARM workers
// some ten times slower than native.
func TestMixedArchitectureSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ARM workers under qemu; skipped with -short")
	}
	if runtime.GOARCH == "arm64" || runtime.GOARCH == "arm" {
		t.Skip("the test runs the ARM workers under qemu beside native ones of another architecture")
	}
	for _, q := range []string{"qemu-aarch64", "qemu-arm"} {
		if _, err := exec.LookPath(q); err != nil {
			t.Skipf("%s not found (Debian: apt-get install qemu-user; scripts/test.sh installs it)", q)
		}
	}
	hubBin, workerBin := buildBinaries(t)
	arm64Bin, armBin := armWorkers(t)
	dir := t.TempDir()
	images := imageFolder(t, filepath.Join(dir, "images"), 3, 12)
	bnModel := filepath.Join(dir, "mobilenet-bn.ctw")
	tinyMobileNet(t, bnModel)

	for _, tc := range []struct {
		name string
		args []string
		data string
	}{
		{"sgd-topk", []string{"--model", "lenet5", "--optimizer", "sgd", "--compress", "topk:0.01", "--lr", "0.05",
			"--batch", "48", "--iterations", "10"}, "mnist"},
		{"adam-fp16", []string{"--model", "lenet5", "--optimizer", "adam", "--compress", "fp16",
			"--batch", "48", "--iterations", "10"}, "mnist"},
		{"batchnorm", []string{"--weights", bnModel, "--train-last", "all", "--optimizer", "adam", "--compress", "fp16",
			"--batch", "12", "--iterations", "4"}, images},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			out := filepath.Join(dir, tc.name)
			args := append([]string{"--data", tc.data, "--min-workers", "3", "--listen", "/ip4/127.0.0.1/tcp/0",
				"--mdns=false", "--json", "--out", filepath.Join(out, "hub")}, tc.args...)
			h := start(t, ctx, "hub", hubBin, args...)
			addr := h.until(t, "listening", 30*time.Second)["addrs"].([]any)[0].(string)
			worker := func(i int) []string {
				return []string{"--hub", addr, "--data", tc.data, "--shard", fmt.Sprintf("%d/3", i),
					"--listen", "/ip4/127.0.0.1/tcp/0", "--json", "--out", filepath.Join(out, fmt.Sprint("w", i))}
			}
			ws := []*proc{
				start(t, ctx, "worker "+runtime.GOARCH, workerBin, worker(0)...),
				start(t, ctx, "worker arm64 (qemu-aarch64)", "qemu-aarch64", append([]string{arm64Bin}, worker(1)...)...),
				start(t, ctx, "worker arm (qemu-arm)", "qemu-arm", append([]string{armBin}, worker(2)...)...),
			}
			hubDone := h.until(t, "done", 3*time.Minute)
			sum, iters := hubDone["weights_sha256"], hubDone["iterations"]
			if sum == nil || sum == "" {
				t.Fatalf("hub done without a weights hash: %v", hubDone)
			}
			for _, w := range ws {
				done := w.until(t, "done", time.Minute)
				if done["weights_sha256"] != sum || done["iterations"] != iters {
					t.Errorf("%s: weights_sha256 %v after %v iterations, the hub's %v after %v", w.name, done["weights_sha256"], done["iterations"], sum, iters)
				}
				if done["mismatches"] != 0.0 {
					t.Errorf("%s: its weights differed from the hub's %v times during the run", w.name, done["mismatches"])
				}
				if p, _ := done["pushes"].(float64); p < 1 {
					t.Errorf("%s pushed no gradient: %v", w.name, done)
				}
				if err := <-w.done; err != nil {
					t.Errorf("%s exited: %v", w.name, err)
				}
			}
			if err := <-h.done; err != nil {
				t.Errorf("hub exited: %v", err)
			}
			t.Logf("%s: %v iterations, weights %v, %.1f s (workers %s, arm64 and arm under qemu)", tc.name, iters, sum,
				time.Since(begin).Seconds(), runtime.GOARCH)
		})
	}
}

// imageFolder writes an image folder of the given classes (c0, c1, …),
// each with n 12×12 RGB PNGs: a class's pictures share a colour, with noise.
func imageFolder(t *testing.T, dir string, classes, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	for c := range classes {
		sub := filepath.Join(dir, fmt.Sprint("c", c))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			img := image.NewRGBA(image.Rect(0, 0, 12, 12))
			for p := 0; p < len(img.Pix); p += 4 {
				base := [3]int{80 * c, 200 - 60*c, 120}
				for k := range 3 {
					img.Pix[p+k] = uint8(min(255, max(0, base[k]+rng.IntN(60)-30)))
				}
				img.Pix[p+3] = 255
			}
			img.Set(0, 0, color.RGBA{255, 255, 255, 255})
			f, err := os.Create(filepath.Join(sub, fmt.Sprintf("%02d.png", i)))
			if err != nil {
				t.Fatal(err)
			}
			if err := png.Encode(f, img); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// tinyMobileNet writes a weight file of MobileNet (mobilenet-small, the
// 32×32 variant) at width 0.25 for 3×16×16 inputs: every block's depthwise
// and pointwise convolutions are followed by batch norm, and it is small
// enough to train a few iterations under qemu.
func tinyMobileNet(t *testing.T, path string) {
	t.Helper()
	cfg := models.Config{Classes: 3, Input: solver.Shape{C: 3, H: 16, W: 16}, Width: 0.25}
	net, err := models.Build(cpu.NewCPU(), "mobilenet-small", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range net.Layers() {
		kinds = append(kinds, l.Kind)
	}
	if !strings.Contains(strings.ToLower(strings.Join(kinds, " ")), "batchnorm") || net.State.Len() == 0 {
		t.Fatalf("mobilenet-small has no batch norm layer (layers %v, %d state values)", kinds, net.State.Len())
	}
	if err := models.SaveFile(path, models.Snapshot("mobilenet-small", cfg, net, nil)); err != nil {
		t.Fatal(err)
	}
}

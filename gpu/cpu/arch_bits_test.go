package cpu_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// stepBits are the weight hashes TestMobileNetStepBits expects after each of
// its steps, by GEMM family: the assembly families (AVX-512, AVX2, NEON) fuse
// the products' multiply-adds, the pure-Go family (other architectures, the
// purego tag) rounds every product, so the two give different bits, each the
// same on every target. Measured on amd64 (AVX2) and checked under
// qemu-aarch64 (NEON, and pure Go), qemu-arm (GOARM=7, pure Go) and amd64
// with -tags purego, with and without GOAMD64=v3. Changed on purpose when
// the filter gradient of small output planes began summing a group of
// samples in one product (colbatch.go), on every architecture alike.
var stepBits = map[string][]string{
	"fused": {"a02f9a60ce65b8c2", "f083c0d57d362237"},
	"go":    {"193efd268806c65e", "89d80208cac5c014"},
}

// TestMobileNetStepBits: two SGD steps of mobilenet-small (α 0.25, 3×32×32,
// batch 4, seeded) leave the same weights, bit for bit, on every
// architecture of a GEMM family. The inputs and weights come from
// rand/v2's Float32 and the fan-in uniform initialisation, which round the
// same everywhere (its NormFloat64 does not: Go fuses its arithmetic on
// arm64). .ci/run runs this test under qemu-aarch64 and qemu-arm.
func TestMobileNetStepBits(t *testing.T) {
	family := "fused"
	if sgemm.Kernel() == "go" {
		family = "go"
	}
	want := stepBits[family]
	be := cpu.NewCPU()
	net, err := models.Build(be, "mobilenet-small", models.Config{Width: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	tr, x, labels := bitsStep(net)
	w := make([]float32, net.NumParams())
	for i, h := range want {
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
		be.Download(w, net.Params)
		if got := floatsHash(w); got != h {
			t.Errorf("%s/%s, GEMM %s: weights after step %d hash to %s, want %s (the %s family's bits)",
				runtime.GOOS, runtime.GOARCH, sgemm.Kernel(), i+1, got, h, family)
		}
	}
}

// bitsStep returns TestMobileNetStepBits's trainer over net, with net's
// weights initialised, and its batch of 4.
func bitsStep(net *solver.Net) (*solver.Trainer, []float32, []int32) {
	r := rand.New(rand.NewPCG(3, 4))
	net.InitParams(r)
	tr := solver.NewTrainer(net, solver.NewSGD(net.B, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
	const batch = 4
	x := make([]float32, batch*net.In.Size())
	for i := range x {
		x[i] = r.Float32() - 0.5
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i % net.Out.Size())
	}
	return tr, x, labels
}

// BenchmarkMobileNetStepBits times TestMobileNetStepBits's step (the
// figure docs/performance.md gives for the cost of rounding every product
// on its own, run under qemu-aarch64 against the code before).
func BenchmarkMobileNetStepBits(b *testing.B) {
	net, err := models.Build(cpu.NewCPU(), "mobilenet-small", models.Config{Width: 0.25})
	if err != nil {
		b.Fatal(err)
	}
	tr, x, labels := bitsStep(net)
	for b.Loop() {
		if _, err := tr.Step(x, labels); err != nil {
			b.Fatal(err)
		}
	}
}

// floatsHash returns the first 16 hex digits of the SHA-256 of v's bits,
// little-endian.
func floatsHash(v []float32) string {
	h := sha256.New()
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// winogradBits are TestWinogradBits's hashes of y, dx and dw, by GEMM
// family (as stepBits).
var winogradBits = map[string][3]string{
	"fused": {"952553866fec8209", "ea0c93e0ae467022", "c05bdb819011932f"},
	"go":    {"b97472b58502e3ff", "81a7804f497eac07", "2985a1799ff31895"},
}

// TestWinogradBits: a convolution on the Winograd path (which
// mobilenet-small has none of) gives the same bits, forward, backward data
// and filter gradient, on every architecture of a GEMM family.
func TestWinogradBits(t *testing.T) {
	family := "fused"
	if sgemm.Kernel() == "go" {
		family = "go"
	}
	// 16 channels in, 20 out, 9×10 outputs: winograd.go's thresholds admit it.
	g := gpu.ConvGeom{N: 2, C: 16, H: 9, W: 10, K: 20, R: 3, S: 3, PadH: 1, PadW: 1}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	uniform := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = r.Float32() - 0.5
		}
		return v
	}
	x, w, dy := uniform(g.N*g.C*g.H*g.W), uniform(g.K*g.C*9), uniform(g.N*g.K*g.OH*g.OW)
	be := cpu.NewCPU()
	y, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
	ws := make([]float32, be.ConvWorkspace(g))
	be.ConvForward(g, gpu.Host(y), gpu.Host(x), gpu.Host(w), nil, gpu.Host(ws))
	be.ConvBackwardData(g, gpu.Host(dx), gpu.Host(dy), gpu.Host(w), gpu.Host(ws))
	be.ConvBackwardFilter(g, gpu.Host(dw), nil, gpu.Host(dy), gpu.Host(x), gpu.Host(ws))
	want := winogradBits[family]
	for i, got := range []string{floatsHash(y), floatsHash(dx), floatsHash(dw)} {
		if got != want[i] {
			t.Errorf("%s/%s, GEMM %s: output %d hashes to %s, want %s (the %s family's bits)",
				runtime.GOOS, runtime.GOARCH, sgemm.Kernel(), i, got, want[i], family)
		}
	}
}

package state

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

func TestHashMatchesNaiveSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 5000} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i)*0.25 - 3
		}
		raw := make([]byte, 4*n)
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		if got, want := Hash(v), wire.Hash(sha256.Sum256(raw)); got != want {
			t.Errorf("n=%d: Hash %x, want %x", n, got[:4], want[:4])
		}
	}
}

// TestHashOfSubslices hashes vectors that start inside a larger array (in
// place on little-endian machines) against the converted bytes.
func TestHashOfSubslices(t *testing.T) {
	base := make([]float32, 2100)
	for i := range base {
		base[i] = float32(i)*0.5 - 7
	}
	for _, off := range []int{1, 3, 1000} {
		v := base[off : off+1025]
		raw := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		if got, want := Hash(v), wire.Hash(sha256.Sum256(raw)); got != want {
			t.Errorf("offset %d: Hash %x, want %x", off, got[:4], want[:4])
		}
	}
}

// BenchmarkHash hashes a lenet-caffe-sized weight vector (431,080 floats)
// as Hash does and, for reference, by converting every float first.
func BenchmarkHash(b *testing.B) {
	v := make([]float32, 431080)
	for i := range v {
		v[i] = float32(i%1000) * 1e-3
	}
	b.Run("converted", func(b *testing.B) {
		b.SetBytes(int64(4 * len(v)))
		raw := make([]byte, 4*len(v))
		for b.Loop() {
			for i, x := range v {
				binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
			}
			sha256.Sum256(raw)
		}
	})
	b.Run("hash", func(b *testing.B) {
		b.SetBytes(int64(4 * len(v)))
		for b.Loop() {
			Hash(v)
		}
	})
}

func TestHashSeesOneBit(t *testing.T) {
	v := []float32{1, 2, 3, 0}
	h := Hash(v)
	v[3] = float32(math.Copysign(0, -1)) // -0 == 0 numerically, not bitwise
	if Hash(v) == h {
		t.Fatal("hash of -0 equals hash of +0")
	}
}

func newNet(t *testing.T, opt string) (*solver.Net, solver.Optimizer) {
	t.Helper()
	b := cpu.NewCPU()
	net, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	o, err := solver.NewOptimizer(b, opt, net.NumParams(), 0.9, 1e-4, false)
	if err != nil {
		t.Fatal(err)
	}
	return net, o
}

// TestCaptureLoadRoundTrip checks that Load(Capture) reproduces weights,
// state, optimizer tensors and steps bit for bit, for both optimizers.
func TestCaptureLoadRoundTrip(t *testing.T) {
	for _, name := range []string{"sgd", "adam"} {
		t.Run(name, func(t *testing.T) {
			src, sopt := newNet(t, name)
			// Take two steps so the optimizer tensors are not zero.
			g := make([]float32, src.NumParams())
			for i := range g {
				g[i] = float32(i%7) * 1e-3
			}
			src.B.Upload(src.Grads, g)
			sopt.Step(src.Params, src.Grads, src.Trainable(), 0.1)
			sopt.Step(src.Params, src.Grads, src.Trainable(), 0.1)
			s := Capture(src, sopt)

			dst, dopt := newNet(t, name)
			dst.InitParams(rand.New(rand.NewPCG(9, 9)))
			if err := Load(dst, dopt, s); err != nil {
				t.Fatal(err)
			}
			if NetHash(dst) != NetHash(src) {
				t.Fatal("weights differ after Load")
			}
			again := Capture(dst, dopt)
			if again.Optimizer.Steps != 2 || len(again.Optimizer.Tensors) != len(s.Optimizer.Tensors) {
				t.Fatalf("optimizer %+v steps/tensors differ", again.Optimizer.Steps)
			}
			for i, tn := range s.Optimizer.Tensors {
				if !slices.Equal(tn.Values, again.Optimizer.Tensors[i].Values) || tn.Name != again.Optimizer.Tensors[i].Name {
					t.Fatalf("optimizer tensor %s differs", tn.Name)
				}
			}
		})
	}
}

// TestLoadRefusesWithoutTouching checks each refusal and that the net is
// bit-identical afterwards.
func TestLoadRefusesWithoutTouching(t *testing.T) {
	src, sopt := newNet(t, "sgd")
	cases := []struct {
		name   string
		mutate func(s *wire.ModelState)
		want   error
	}{
		{"short weights", func(s *wire.ModelState) { s.Weights = s.Weights[:10] }, ErrMismatch},
		{"NaN weight", func(s *wire.ModelState) { s.Weights[5] = float32(math.NaN()) }, ErrNonFinite},
		{"wrong optimizer", func(s *wire.ModelState) { s.Optimizer.Name = "adam" }, ErrMismatch},
		{"missing tensor", func(s *wire.ModelState) { s.Optimizer.Tensors = nil }, ErrMismatch},
		{"renamed tensor", func(s *wire.ModelState) { s.Optimizer.Tensors[0].Name = "exp_avg" }, ErrMismatch},
		{"short tensor", func(s *wire.ModelState) { s.Optimizer.Tensors[0].Values = s.Optimizer.Tensors[0].Values[:1] }, ErrMismatch},
		{"Inf in tensor", func(s *wire.ModelState) { s.Optimizer.Tensors[0].Values[3] = float32(math.Inf(1)) }, ErrNonFinite},
		{"negative steps", func(s *wire.ModelState) { s.Optimizer.Steps = -1 }, ErrMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Capture(src, sopt) // fresh copy to mutate
			c.mutate(&s)
			dst, dopt := newNet(t, "sgd")
			dst.InitParams(rand.New(rand.NewPCG(5, 5)))
			before := NetHash(dst)
			if err := Load(dst, dopt, s); !errors.Is(err, c.want) {
				t.Fatalf("Load: %v, want %v", err, c.want)
			}
			if NetHash(dst) != before {
				t.Fatal("refused Load changed the weights")
			}
		})
	}
}

func TestConfigRoundTrip(t *testing.T) {
	c := models.Config{Classes: 7, Input: solver.Shape{C: 3, H: 32, W: 30}, Width: 0.5}
	got, err := DecodeConfig(EncodeConfig(c))
	if err != nil || got != c {
		t.Fatalf("DecodeConfig = %+v, %v; want %+v", got, err, c)
	}
	for _, bad := range []string{"classes\n", "colour=red\n", "classes=x\n"} {
		if _, err := DecodeConfig([]byte(bad)); !errors.Is(err, ErrConfig) {
			t.Errorf("DecodeConfig(%q) = %v, want ErrConfig", bad, err)
		}
	}
}

func TestDescribeRoundTrip(t *testing.T) {
	b := cpu.NewCPU()
	cases := []struct {
		opt   solver.Optimizer
		sched solver.Schedule
	}{
		{solver.NewSGD(b, 4, 0.9, 1e-4, true), solver.Constant(0.05)},
		{solver.NewSGD(b, 4, 0, 0, false), solver.StepLR{Base: 0.1, Gamma: 0.5, Every: 10}},
		{solver.NewAdam(b, 4, 1e-3), solver.Cosine{Base: 1e-3, Min: 1e-5, Total: 100, Warmup: 5}},
	}
	for _, c := range cases {
		var s wire.Session
		if err := Describe(&s, c.opt, c.sched); err != nil {
			t.Fatal(err)
		}
		opt, err := NewOptimizer(b, c.opt.Name(), 4, s)
		if err != nil {
			t.Fatal(err)
		}
		switch want := c.opt.(type) {
		case *solver.SGD:
			got := opt.(*solver.SGD)
			if got.Momentum != want.Momentum || got.WeightDecay != want.WeightDecay || got.Nesterov != want.Nesterov {
				t.Errorf("SGD %+v, want %+v", got, want)
			}
		case *solver.Adam:
			if got := opt.(*solver.Adam); got.WeightDecay != want.WeightDecay {
				t.Errorf("Adam decay %v, want %v", got.WeightDecay, want.WeightDecay)
			}
		}
		sched, err := NewSchedule(s.LR)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range []int{0, 3, 17, 99} {
			if sched.LR(it) != c.sched.LR(it) {
				t.Errorf("%T: LR(%d) = %v, want %v", c.sched, it, sched.LR(it), c.sched.LR(it))
			}
		}
	}
	odd := solver.NewAdam(b, 4, 0)
	odd.Beta1 = 0.8
	if err := Describe(&wire.Session{}, odd, solver.Constant(1)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Adam β1 0.8: %v, want ErrUnsupported", err)
	}
}

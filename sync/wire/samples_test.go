package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// samples returns one fully populated message of every kind, with every
// field set to a value other than its zero, so that a field the codec drops
// shows up in a round trip. Its vectors have 1000 values.
func samples() []Message { return samplesOf(1000) }

// samplesOf is samples with vectors of n values (and 20 for batch-norm
// state), small ones for the fuzzer.
func samplesOf(n int) []Message {
	vec := func(n int, seed uint64) Floats {
		r := rand.New(rand.NewPCG(seed, 1))
		f := make(Floats, n)
		for i := range f {
			f[i] = float32(r.NormFloat64())
		}
		return f
	}
	state := ModelState{
		Weights: vec(n, 1),
		State:   vec(min(n, 20), 2),
		Optimizer: OptimizerState{
			Name:  "adam",
			Steps: 1234,
			Tensors: []NamedFloats{
				{Name: "exp_avg", Values: vec(n, 3)},
				{Name: "exp_avg_sq", Values: vec(n, 4)},
			},
		},
	}
	hdr := func(iter uint64, sender string) Header {
		return Header{Version: ProtocolVersion, Iteration: iter, Sender: sender}
	}
	return []Message{
		&Register{
			Header: hdr(0, "12D3KooWworker"), Device: "Pixel 7", Backend: "opencl",
			Speed: 812.5, Shard: "mnist/3-of-4", Info: map[string]string{"token": "s3cret", "app": "1.2.0"},
			Classes: []string{"cat", "dog", "ünïcode"}, Battery: Battery{Percent: 15, Status: BatteryDischarging},
		},
		&Welcome{
			Header: hdr(77, "hub"), WorkerID: "w3", Model: "lenet-caffe",
			ModelConfig: []byte(`{"classes":10}`), ModelState: state, BatchSize: 48,
			Session: Session{
				GlobalBatch: 256, Iterations: 5000, DeadlineMillis: 30000, Compression: "topk:0.01",
				Parts:    []int{0, 520, 25570, 425570},
				LR:       Schedule{Kind: "cosine", Base: 0.1, Min: 0.001, Gamma: 0.5, Every: 10, Total: 5000, Warmup: 100},
				Momentum: 0.9, WeightDecay: 5e-4, Nesterov: true, Status: true,
			},
		},
		&Push{
			Header: hdr(78, "w3"), Samples: 48, ComputeNanos: 1_234_567_890, Loss: 2.302585,
			Gradient: Floats{0, -0, 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, math.SmallestNonzeroFloat32},
			Battery:  Battery{Percent: 99.5, Status: BatteryFull},
		},
		&Merged{
			Header: hdr(78, "hub"), Gradient: vec(n, 5),
			BatchSizes: BatchSizes{"w1": 100, "w2": 108, "w3": 48}, WeightsHash: Hash{1, 2, 3, 31: 0xff}, LR: 0.05,
		},
		// A compressed push of part 2 and a partial merged part: layer-wise
		// overlap with a codec (the payload is opaque to this package).
		&Push{Header: hdr(78, "w3"), Samples: 48, ComputeNanos: 5, Loss: 1, Part: 2, Enc: []byte{4, 8, 1, 3, 0, 60}},
		&Merged{Header: hdr(78, "hub"), Part: 1, Enc: []byte{2, 1, 0, 60}, Partial: true},
		&ResyncRequest{Header: hdr(79, "w3"), Reason: "weights hash differs"},
		&ResyncAnswer{Header: hdr(80, "hub"), ModelState: state},
		&Goodbye{Header: hdr(5000, "hub"), Reason: "iterations done", FinalWeights: vec(n, 6), FinalState: vec(min(n, 20), 7)},
		&Reject{Header: hdr(0, "hub"), Code: CodeVersion, Message: "update the app: hub speaks protocol 1"},
		&Status{Header: hdr(81, "w3"), Battery: Battery{Percent: 14, Status: BatteryCharging}},
	}
}

// frameBytes returns m's frame.
func frameBytes(t testing.TB, m Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteFrame(&b, m); err != nil {
		t.Fatalf("WriteFrame(%s): %v", m.Kind(), err)
	}
	return b.Bytes()
}

// TestSamplesCoverEveryKind guards the round-trip tests against a kind
// added to the protocol but not to samples.
func TestSamplesCoverEveryKind(t *testing.T) {
	seen := map[Kind]bool{}
	for _, m := range samples() {
		seen[m.Kind()] = true
	}
	for k := Kind(1); k <= maxKind; k++ {
		if !seen[k] {
			t.Errorf("samples() has no %s message", k)
		}
		if New(k) == nil || New(k).Kind() != k {
			t.Errorf("New(%d) = %v, want a %s", k, New(k), k)
		}
	}
	if New(0) != nil || New(maxKind+1) != nil {
		t.Errorf("New of an unknown kind should be nil")
	}
}

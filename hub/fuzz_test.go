package hub_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// fuzzPeers are the peer ids the fuzzer speaks as: three that may register
// (MaxWorkers is 2, so one is refused as the run is full) and a stranger off
// the allowlist.
var fuzzPeers = [...]string{"w0", "w1", "w2", "mallory"}

// tinyCore returns a hub core over a 15-parameter network (linear 4 → 3), so
// that the fuzzer can write whole gradients. The core checks only that the
// model name is registered, never that the net is that model: the name is
// lenet5 for NewCore's sake.
func tinyCore(t testing.TB) *testCore {
	t.Helper()
	b := cpu.NewCPU()
	net, err := solver.NewNet(b, solver.Shape{C: 1, H: 2, W: 2},
		[]solver.Node{{Layer: solver.NewFlatten("flat")}, {Layer: solver.NewLinear("fc", 3)}})
	if err != nil {
		t.Fatal(err)
	}
	init := make([]float32, net.NumParams())
	for i := range init {
		init[i] = float32(i%5) / 10
	}
	b.Upload(net.Params, init)
	tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
	cfg := hub.DefaultConfig()
	cfg.Compression, cfg.Overlap = "none", false // the seeds push raw floats
	cfg.MinWorkers, cfg.MaxWorkers, cfg.GlobalBatch = 1, 2, 6
	cfg.Iterations, cfg.DeadlineTicks, cfg.MaxMisses = 12, 3, 2
	cfg.Allow = map[string]bool{"w0": true, "w1": true, "w2": true}
	h, err := newTestCore(cfg, hub.Model{Name: "lenet5", Trainer: tr})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// tinyParams is the parameter count of tinyCore's network.
const tinyParams = 15

// validPush returns a push of 3 samples for iteration it that tinyCore
// accepts from a member.
func validPush(it uint64) *wire.Push {
	g := make(wire.Floats, tinyParams)
	for i := range g {
		g[i] = float32(i) / 100
	}
	return &wire.Push{Header: wire.Header{Iteration: it}, Samples: 3, ComputeNanos: 1000, Loss: 1, Gradient: g}
}

// body encodes m as a frame body (the bytes wire.Decode reads).
func body(t testing.TB, m wire.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := wire.WriteFrame(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()[4:]
}

// FuzzHubStep drives a hub core with a program of arbitrary inputs: frame
// bodies decoded by wire.Decode and stepped as one of the peers, pushes
// built from a few bytes (so that valid merges are easy to reach), ticks,
// leaves and stops. After every input it checks that the core did not
// panic, that the master weights changed only when the core reported a
// merge in the same Ready, and that the iteration advanced by exactly the
// merges reported.
//
//	go test ./hub -run '^$' -fuzz FuzzHubStep -fuzztime 30s
//
// Each program byte is an op: op&7 picks what to do, (op>>3)&3 the peer.
//
//	0-2  the next 2 bytes are a length L, the next L bytes a frame body
//	3    a push built from the next 3 bytes (iteration offset, samples, value)
//	4    Tick
//	5    Leave
//	6    Register
//	7    Stop
func FuzzHubStep(f *testing.F) {
	frame := func(m wire.Message) []byte {
		b := body(f, m)
		return append([]byte{0, byte(len(b) >> 8), byte(len(b))}, b...)
	}
	reg := func(peer int) byte { return byte(6 | peer<<3) }
	pushOp := func(peer int, off, samples, val byte) []byte {
		return []byte{byte(3 | peer<<3), off, samples, val}
	}
	// Two workers register, then push valid gradients for iterations 0-2.
	seed := []byte{reg(0), reg(1)}
	for range 3 {
		seed = append(seed, pushOp(0, 1, 3, 20)...)
		seed = append(seed, pushOp(1, 1, 3, 40)...)
	}
	f.Add(seed)
	f.Add(append([]byte{reg(0)}, frame(validPush(0))...))
	f.Add(append([]byte{reg(0), reg(1), reg(2), reg(3), 4, 4, 4, 4, 5}, frame(&wire.Goodbye{Reason: "bye"})...))
	f.Add(append(append([]byte{reg(0)}, frame(&wire.ResyncRequest{Reason: "x"})...), 7))
	f.Add(append([]byte{reg(0), reg(1)}, frame(&wire.Reject{Code: wire.CodeModel, Message: "no"})...))
	f.Add(frame(&wire.Register{Device: "d", Speed: math.Inf(1)}))
	f.Add([]byte{reg(0), 4, 4, 4, 4, 4, 4, 4, 4, 4, 4})

	f.Fuzz(func(t *testing.T, prog []byte) { runProgram(t, prog) })
}

// TestHubStepProgram checks the fuzz harness itself: its first seed
// reaches three merges.
func TestHubStepProgram(t *testing.T) {
	seed := []byte{6, 6 | 1<<3}
	for range 3 {
		seed = append(seed, 3, 1, 3, 20, 3|1<<3, 1, 3, 40)
	}
	if h := runProgram(t, seed); h.Iteration() != 3 {
		t.Fatalf("the seed program reached iteration %d, want 3", h.Iteration())
	}
}

// runProgram runs a FuzzHubStep program, checking after every op.
func runProgram(t *testing.T, prog []byte) *testCore {
	h := tinyCore(t)
	h.Advance()
	for len(prog) > 0 {
		op := prog[0]
		prog = prog[1:]
		peer := fuzzPeers[(op>>3)&3]
		before, iter := state.NetHash(h.Trainer().Net), h.Iteration()
		switch op & 7 {
		case 0, 1, 2:
			if len(prog) < 2 {
				return h
			}
			l := int(binary.BigEndian.Uint16(prog))
			prog = prog[2:]
			l = min(l, len(prog))
			m, err := wire.Decode(prog[:l])
			prog = prog[l:]
			if err == nil {
				h.Step(peer, m)
			}
		case 3:
			if len(prog) < 3 {
				return h
			}
			p := validPush(h.Iteration() + uint64(prog[0]%3) - 1)
			p.Samples = int(int8(prog[1]))
			for i := range p.Gradient {
				p.Gradient[i] *= float32(int8(prog[2]))
			}
			if prog[2] == 0x7f {
				p.Gradient[tinyParams-1] = float32(math.NaN())
			}
			prog = prog[3:]
			h.Step(peer, p)
		case 4:
			h.Tick()
		case 5:
			h.Leave(peer)
		case 6:
			h.Step(peer, &wire.Register{Device: peer})
		case 7:
			h.Stop("fuzz")
		}
		merges := 0
		for _, e := range h.Ready().Events {
			if e.Kind == hub.EventMerged {
				merges++
			}
		}
		// A merge may leave the weights as they were (a zero gradient); no
		// other input may change them.
		if state.NetHash(h.Trainer().Net) != before && merges == 0 {
			t.Fatalf("op %d: the weights changed without a merge", op)
		}
		if h.Iteration() != iter+uint64(merges) {
			t.Fatalf("op %d: iteration %d → %d with %d merges", op, iter, h.Iteration(), merges)
		}
		for _, env := range h.Ready().Messages {
			if env.To == "mallory" {
				if r, ok := env.Msg.(*wire.Reject); !ok || r.Code != wire.CodeAuth {
					t.Fatalf("sent %s to the stranger", env.Msg.Kind())
				}
			}
		}
		h.Advance()
	}
	return h
}

package solver_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// seqNet is a small language model: embedding, a recurrent layer of the
// given cell, a linear layer over the vocabulary.
func seqNet(t testing.TB, b gpu.Backend, cell solver.Cell, vocab, context, dim, hidden, layers int) *solver.Net {
	t.Helper()
	rnn := solver.NewLSTM("rnn", hidden, layers, false)
	rnn.Cell = cell
	net, err := solver.NewNet(b, solver.Shape{C: 1, H: 1, W: context}, []solver.Node{
		{Layer: solver.NewEmbedding("emb", vocab, dim)},
		{Layer: rnn},
		{Layer: solver.NewLinear("fc", vocab)},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(3, 4)))
	return net
}

// cyclicBatch fills x (n samples of context ids) and labels with windows of
// the sequence 0, 1, ..., vocab-1, 0, 1, ... at random starts: the next id
// is the last one plus 1.
func cyclicBatch(r *rand.Rand, x []float32, labels []int32, context, vocab int) {
	for i := range labels {
		s := r.IntN(vocab)
		for k := range context {
			x[i*context+k] = float32((s + k) % vocab)
		}
		labels[i] = int32((s + context) % vocab)
	}
}

// An embedding's ids are checked on the host: Net.CheckInput names a
// fractional, negative or too large id, and Forward refuses one before any
// kernel has run (a panic: the caller skipped the check).
func TestEmbeddingIDsChecked(t *testing.T) {
	b := cpu.NewCPU()
	net := seqNet(t, b, solver.LSTMCell, 7, 3, 4, 5, 1)
	if err := net.CheckInput([]float32{0, 6, 3, 1, 2, 5}); err != nil {
		t.Fatalf("ids in range: %v", err)
	}
	for _, bad := range []float32{7, -1, 1.5, 1e9} {
		x := []float32{0, 6, 3, 1, bad, 5}
		err := net.CheckInput(x)
		if err == nil || !strings.Contains(err.Error(), "position 4") {
			t.Errorf("id %g: CheckInput = %v, want an error naming position 4", bad, err)
		}
		xb := b.Alloc(len(x))
		b.Upload(xb, x)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("id %g: Forward did not panic", bad)
				}
			}()
			net.Forward(xb, 2, true)
		}()
	}
}

// A network of embedding, LSTM or GRU and linear layers learns a task that
// needs the sequence (the next id of a cycle, shown at a random phase), and
// a steady-state training step allocates nothing on the CPU backend.
func TestSeqNetLearnsAllocFree(t *testing.T) {
	for _, cell := range []solver.Cell{solver.LSTMCell, solver.GRUCell} {
		t.Run(cell.String(), func(t *testing.T) {
			const vocab, context, batch = 11, 4, 32
			b := cpu.NewCPU()
			net := seqNet(t, b, cell, vocab, context, 8, 16, 1)
			tr := solver.NewTrainer(net, solver.NewAdam(b, net.NumParams(), 0), solver.Constant(0.02))
			r := rand.New(rand.NewPCG(5, 6))
			x, labels := make([]float32, batch*context), make([]int32, batch)
			var first, last float64
			for i := range 150 {
				cyclicBatch(r, x, labels, context, vocab)
				loss, err := tr.Step(x, labels)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = loss
				}
				last = loss
			}
			if last > 0.1*first {
				t.Errorf("loss %.4f after 150 steps from %.4f: want below a tenth", last, first)
			}
			allocs := testing.AllocsPerRun(5, func() {
				if _, err := tr.Step(x, labels); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per steady-state step, want 0", allocs)
			}
			acc, _ := tr.Evaluate(cycleSamples{vocab, context}, 7) // another batch size
			if acc < 0.99 {
				t.Errorf("accuracy %.3f on the cycle, want 1", acc)
			}
		})
	}
}

// cycleSamples is every window of the cycle (solver.Samples).
type cycleSamples struct{ vocab, context int }

func (c cycleSamples) Len() int { return c.vocab }
func (c cycleSamples) Get(i int, dst []float32) int32 {
	for k := range c.context {
		dst[k] = float32((i + k) % c.vocab)
	}
	return int32((i + c.context) % c.vocab)
}

// BenchmarkLSTMStep is one training step (forward, loss, backward, Adam) of
// a word-level language model on the CPU backend: embedding, LSTM, linear
// over the vocabulary, at lstm-lm's sizes and a smaller one, for both cells.
func BenchmarkLSTMStep(b *testing.B) {
	for _, c := range []struct {
		cell                               solver.Cell
		vocab, context, dim, hidden, batch int
	}{
		{solver.LSTMCell, 2000, 32, 64, 128, 32},
		{solver.LSTMCell, 500, 16, 32, 64, 32},
		{solver.GRUCell, 2000, 32, 64, 128, 32},
	} {
		b.Run(fmt.Sprintf("%v/V%d-T%d-E%d-H%d-N%d", c.cell, c.vocab, c.context, c.dim, c.hidden, c.batch), func(b *testing.B) {
			be := cpu.NewCPU()
			net := seqNet(b, be, c.cell, c.vocab, c.context, c.dim, c.hidden, 1)
			tr := solver.NewTrainer(net, solver.NewAdam(be, net.NumParams(), 0), solver.Constant(0.001))
			r := rand.New(rand.NewPCG(1, 1))
			x, labels := make([]float32, c.batch*c.context), make([]int32, c.batch)
			cyclicBatch(r, x, labels, c.context, c.vocab)
			b.ResetTimer()
			for range b.N {
				if _, err := tr.Step(x, labels); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.batch*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

package sim

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/sync/wire"
)

// linkMessages returns a message of every kind with every field the
// simulator's cores fill, and a few with nil and empty vectors.
func linkMessages() []wire.Message {
	h := func(it uint64, from string) wire.Header { return wire.Header{Iteration: it, Sender: from} }
	vec := func(n int) wire.Floats {
		v := make(wire.Floats, n)
		for i := range v {
			v[i] = float32(i)*0.5 - 3
		}
		return v
	}
	st := wire.ModelState{Weights: vec(300), State: vec(4), Optimizer: wire.OptimizerState{Name: "sgd", Steps: 3,
		Tensors: []wire.NamedFloats{{Name: "momentum", Values: vec(300)}}}}
	return []wire.Message{
		&wire.Register{Header: h(0, "a"), Device: "nexus-6p", Backend: "cpu", Speed: 2.5, Info: map[string]string{"k": "v"}},
		&wire.Welcome{Header: h(3, "hub"), WorkerID: "a", Model: "lenet5", ModelConfig: []byte("x=1\n"), ModelState: st, BatchSize: 32,
			Session: wire.Session{GlobalBatch: 64, Iterations: 9, Parts: []int{0, 100}, LR: wire.Schedule{Kind: "constant", Base: 0.1}, Frozen: []string{}}},
		&wire.Push{Header: h(4, "a"), Samples: 32, ComputeNanos: 7, Loss: 2.3, Gradient: vec(300), State: wire.Floats{}},
		&wire.Push{Header: h(4, "a"), Samples: 32, Part: 1, Enc: []byte{1, 2, 3}},
		&wire.Merged{Header: h(4, "hub"), Gradient: vec(300), BatchSizes: wire.BatchSizes{"a": 30, "b": 34}, WeightsHash: wire.Hash{1, 31: 2}, LR: 0.1},
		&wire.Merged{Header: h(4, "hub"), Part: 1, Enc: []byte{}, Partial: true},
		&wire.ResyncRequest{Header: h(5, "a"), Reason: "why"},
		&wire.ResyncAnswer{Header: h(6, "hub"), ModelState: st},
		&wire.Goodbye{Header: h(9, "hub"), Reason: "done", FinalWeights: vec(300), FinalState: nil},
		&wire.Reject{Header: h(0, "hub"), Code: wire.CodeFull, Message: "full"},
	}
}

// TestHandoverMatchesCodec: the copy a receiver gets is what the codec
// decodes, field for field, and shares no memory with the sender's message.
func TestHandoverMatchesCodec(t *testing.T) {
	r := &runner{sent: map[wire.Kind]int{}}
	r.codecW, r.codecR = wire.NewWriter(&r.frame), wire.NewReader(&r.frame, maxFrame)
	for _, m := range linkMessages() {
		c, err := r.handover(m)
		if err != nil {
			t.Fatalf("%s: %v", m.Kind(), err)
		}
		if c.Head().Version != wire.ProtocolVersion || c.Head().Iteration != m.Head().Iteration {
			t.Errorf("%s: header %+v", m.Kind(), *c.Head())
		}
		// The sender scribbles over its vectors: the copy must not see it.
		before := frame(t, c)
		for _, v := range vectors(m) {
			for i := range v {
				v[i] = -1
			}
		}
		if !bytes.Equal(frame(t, c), before) {
			t.Errorf("%s: the copy shares memory with the sent message", m.Kind())
		}
	}
}

// TestRoundTripCatches: a copy that differs from what the codec decodes
// (a value, or nil for empty) stops the run with ErrInvariant naming it.
func TestRoundTripCatches(t *testing.T) {
	r := &runner{sent: map[wire.Kind]int{}}
	r.codecW, r.codecR = wire.NewWriter(&r.frame), wire.NewReader(&r.frame, maxFrame)
	m := linkMessages()[4].(*wire.Merged)
	c := copyMessage(m).(*wire.Merged)
	c.Gradient[7]++
	if err := r.roundTrip(m, c); !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), "Gradient") {
		t.Errorf("changed value: %v", err)
	}
	c = copyMessage(m).(*wire.Merged)
	c.Enc = []byte{}
	if err := r.roundTrip(m, c); !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), "Enc") {
		t.Errorf("empty for nil: %v", err)
	}
	c = copyMessage(m).(*wire.Merged)
	c.BatchSizes["b"] = 1
	if err := r.roundTrip(m, c); !errors.Is(err, ErrInvariant) || !strings.Contains(err.Error(), "BatchSizes") {
		t.Errorf("changed map: %v", err)
	}
}

func frame(t *testing.T, m wire.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := wire.WriteFrame(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// vectors returns m's float vectors.
func vectors(m wire.Message) []wire.Floats {
	switch m := m.(type) {
	case *wire.Welcome:
		return []wire.Floats{m.Weights, m.State, m.Optimizer.Tensors[0].Values}
	case *wire.ResyncAnswer:
		return []wire.Floats{m.Weights, m.State, m.Optimizer.Tensors[0].Values}
	case *wire.Push:
		return []wire.Floats{m.Gradient, m.State}
	case *wire.Merged:
		return []wire.Floats{m.Gradient, m.State}
	case *wire.Goodbye:
		return []wire.Floats{m.FinalWeights, m.FinalState}
	}
	return nil
}

// BenchmarkHandover hands a lenet-caffe-sized push (431,080 floats) over
// as the simulator does (size it, copy it) and as the in-memory transport
// did (encode it to size it, encode it again into a frame, copy the frame,
// decode it).
func BenchmarkHandover(b *testing.B) {
	m := &wire.Push{Header: wire.Header{Iteration: 5, Sender: "a"}, Samples: 32, Gradient: make(wire.Floats, 431080)}
	b.Run("codec", func(b *testing.B) {
		var buf bytes.Buffer
		sizer := wire.NewWriter(&buf)
		w := wire.NewWriter(&buf)
		for b.Loop() {
			buf.Reset()
			if err := sizer.WriteMessage(m); err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			if err := w.WriteMessage(m); err != nil {
				b.Fatal(err)
			}
			fr := bytes.Clone(buf.Bytes())
			if _, err := wire.ReadFrame(bytes.NewReader(fr), maxFrame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		s := wire.NewSizer()
		for b.Loop() {
			if _, err := s.Size(m); err != nil {
				b.Fatal(err)
			}
			copyMessage(m)
		}
	})
}

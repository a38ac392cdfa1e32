package wire

import (
	"testing"
)

// TestSizerMatchesFrames checks Size against the frames WriteMessage
// writes, for every kind, with vectors around the bin8/bin16/bin32
// boundaries, and nil and empty ones.
func TestSizerMatchesFrames(t *testing.T) {
	s := NewSizer()
	var msgs []Message
	for _, n := range []int{0, 1, 63, 64, 16383, 16384, 20000} {
		msgs = append(msgs, samplesOf(n)...)
	}
	msgs = append(msgs,
		&Push{Gradient: Floats{}, State: Floats{}},
		&Merged{Header: Header{Iteration: 1 << 40, Sender: "a-long-sender-name-of-more-than-31-bytes"}},
		&Goodbye{}, &Welcome{}, &ResyncAnswer{})
	for _, m := range msgs {
		got, err := s.Size(m)
		if err != nil {
			t.Fatalf("Size(%s): %v", m.Kind(), err)
		}
		if want := len(frameBytes(t, m)); got != want {
			t.Errorf("Size(%s) = %d, the frame has %d bytes", m.Kind(), got, want)
		}
	}
	if _, err := s.Size(nil); err == nil {
		t.Error("Size(nil) succeeded")
	}
}

// BenchmarkSizer measures a lenet-caffe-sized Merged (431,080 floats)
// with the Sizer and by encoding it.
func BenchmarkSizer(b *testing.B) {
	m := &Merged{Header: Header{Iteration: 12, Sender: "hub"}, Gradient: make(Floats, 431080), BatchSizes: BatchSizes{"a": 1}}
	b.Run("encode", func(b *testing.B) {
		w := NewWriter(discard{})
		for b.Loop() {
			if err := w.WriteMessage(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sizer", func(b *testing.B) {
		s := NewSizer()
		for b.Loop() {
			if _, err := s.Size(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

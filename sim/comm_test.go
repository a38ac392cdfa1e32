package sim

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestCheckerParts: with parts and a lossy codec, each merged part is
// checked against the pushes of that part, up to the codec's rounding:
// an int8 part within half a step passes, one a full step off fails.
func TestCheckerParts(t *testing.T) {
	c := newChecker(6, []int{0, 2}, compress.Int8{})
	enc := func(v ...float32) []byte { return compress.Int8{}.Append(nil, v) }
	for _, m := range []*wire.Push{
		{Samples: 1, Part: 1, Enc: enc(1, 2, 3, 4)},
		{Samples: 3, Part: 1, Enc: enc(5, 2, -1, 0)},
		{Samples: 3, Part: 0, Enc: enc(127, 0)},
	} {
		if err := c.pushed(m); err != nil {
			t.Fatal(err)
		}
	}
	// Part 1's mean is (4, 2, 0, 1); its block's int8 step is 4/127.
	if err := c.merged(&wire.Merged{Part: 1, Enc: enc(4, 2, 0, 1), Partial: true}); err != nil {
		t.Fatalf("the int8 encoding of the mean: %v", err)
	}
	if err := c.merged(&wire.Merged{Part: 1, Enc: enc(4, 2, 0.04, 1)}); !errors.Is(err, ErrInvariant) {
		t.Fatalf("a value a step off: %v", err)
	}
	// Part 0 had one push of 3 samples: its mean is itself.
	if err := c.merged(&wire.Merged{Part: 0, Enc: enc(127, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := c.merged(&wire.Merged{Part: 2, Enc: enc(1)}); !errors.Is(err, ErrInvariant) {
		t.Fatalf("a part the session does not have: %v", err)
	}
}

// TestPartReadyAt: lenet-caffe's parts are ready in reverse layer order,
// the fully connected ones before half the step, the first conv layer's at
// its end.
func TestPartReadyAt(t *testing.T) {
	net, err := models.Build(cpu.NewCPU(), "lenet-caffe", models.Config{})
	if err != nil {
		t.Skip("model needs a backend:", err)
	}
	at, err := partReadyAt("lenet-caffe", models.Config{}, net.Layers())
	if err != nil {
		t.Fatal(err)
	}
	if len(at) != 4 {
		t.Fatalf("%d parts, want 4 (conv1, conv2, ip1, ip2): %v", len(at), at)
	}
	for j := 1; j < len(at); j++ {
		if !(at[j] < at[j-1]) {
			t.Errorf("part %d ready at %.3f, not before part %d at %.3f", j, at[j], j-1, at[j-1])
		}
	}
	if !(at[2] > 1.0/3 && at[2] < 0.5) || at[0] < 0.99 {
		t.Errorf("ready at %v: want ip1 within (1/3, 1/2) and conv1 at the end", at)
	}
}

package sim

import (
	"math"
	"testing"

	"github.com/cotrain/cotrain/models"
)

// TestFLOPs checks the per-sample forward operations against counts done by
// hand from the layer shapes.
func TestFLOPs(t *testing.T) {
	cases := []struct {
		model string
		want  float64
	}{
		// conv1 20@5x5 on 1x28x28 → 20x24x24; pool → 20x12x12;
		// conv2 50@5x5 → 50x8x8; pool → 50x4x4; flatten 800; ip1 500; relu; ip2 10.
		{"lenet-caffe", 2*20*1*25*24*24 + 20*24*24 + 20*12*12 +
			2*50*20*25*8*8 + 50*8*8 + 50*4*4 + 800 +
			2*800*500 + 500 + 500 + 2*500*10 + 10},
		// conv1 6@5x5 pad 2 → 6x28x28; relu; pool 6x14x14; conv2 16@5x5 → 16x10x10;
		// relu; pool 16x5x5; flatten 400; fc1 120; relu; fc2 84; relu; fc3 10.
		{"lenet5", 2*6*25*28*28 + 6*28*28 + 6*28*28 + 6*14*14 +
			2*16*6*25*10*10 + 16*10*10 + 16*10*10 + 16*5*5 + 400 +
			2*400*120 + 120 + 120 + 2*120*84 + 84 + 84 + 2*84*10 + 10},
	}
	for _, tc := range cases {
		got, err := FLOPs(tc.model, models.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 0.5 {
			t.Errorf("%s: %v FLOPs, want %v", tc.model, got, tc.want)
		}
		step, _ := TrainFLOPs(tc.model, models.Config{}, 64)
		if step != 3*64*got {
			t.Errorf("%s: train step %v, want %v", tc.model, step, 3*64*got)
		}
	}
	if _, err := FLOPs("no-such-model", models.Config{}); err == nil {
		t.Error("unknown model accepted")
	}
}

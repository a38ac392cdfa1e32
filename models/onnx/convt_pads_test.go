package onnx

import (
	"errors"
	"testing"
)

// TestConvTPads: ConvTranspose's pads from output_shape as ONNX's formula
// gives them: the odd unit of the total at the start, except for
// SAME_UPPER (at the end); the full N×C×H×W output_shape is read too, and
// an output larger than the unpadded one is refused.
func TestConvTPads(t *testing.T) {
	in, k, s, d, op := [2]int{9, 11}, [2]int{3, 3}, [2]int{2, 2}, [2]int{2, 1}, [2]int{0, 1}
	// Unpadded: 2·8 + 4 + 1 = 21 high, 2·10 + 1 + 2 + 1 = 24 wide.
	for _, tc := range []struct {
		auto  string
		shape []int64
		want  [4]int
	}{
		{"", []int64{18, 22}, [4]int{2, 1, 1, 1}},
		{"NOTSET", []int64{2, 3, 18, 22}, [4]int{2, 1, 1, 1}},
		{"SAME_LOWER", []int64{18, 22}, [4]int{2, 1, 1, 1}},
		{"SAME_UPPER", []int64{18, 22}, [4]int{1, 1, 2, 1}},
		{"SAME_UPPER", []int64{21, 24}, [4]int{}},
	} {
		got, err := convTPads(tc.shape, tc.auto, in, k, s, d, op)
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %v, %v; want %v", tc.auto, tc.shape, got, err, tc.want)
		}
	}
	if _, err := convTPads([]int64{22, 24}, "", in, k, s, d, op); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an output larger than the unpadded one: %v, want ErrUnsupported", err)
	}
	if _, err := convTPads([]int64{18}, "", in, k, s, d, op); !errors.Is(err, ErrMalformed) {
		t.Errorf("a 1-element output_shape: %v, want ErrMalformed", err)
	}
}

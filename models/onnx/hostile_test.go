package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/internal/limits"
)

// The hostile models of issue 28 (testdata/hostile, written by
// testdata/hostile/gen.go from the LeNet-5 export): each imported
// cleanly before and crashed or exhausted memory later (predict, eval, a
// worker joining a hub serving it). Each must now be refused by Import,
// with an error naming what is wrong, without allocating the model.
func TestImportHostile(t *testing.T) {
	for _, tc := range []struct {
		file string
		want error
		text []string
	}{
		// Conv pads 2^60-11: the flattened size wrapped to 64; predict then
		// panicked with slice bounds out of range in the CPU convolution.
		{"conv_pads.onnx", ErrMalformed, []string{"pads 1152921504606846965", "at most 16777216"}},
		// Input 1×1×(2^62+7)×4: 4·(2^62+7) wrapped to 28; predict died with
		// SIGSEGV in im2col, a PNG input panicked in data.aaTaps.
		{"input_rows.onnx", ErrMalformed, []string{"dimension 2", "4611686018427387911"}},
		// Input channels 2^32: solver.NewNet asked for a 1.2 TB block.
		{"input_channels.onnx", ErrMalformed, []string{"dimension 1", "4294967296"}},
		// Zeros that were replaced by defaults instead of refused.
		{"conv_stride0.onnx", ErrMalformed, []string{"strides 0"}},
		{"conv_group0.onnx", ErrMalformed, []string{"group 0"}},
		{"maxpool_stride0.onnx", ErrMalformed, []string{"MaxPool", "strides 0"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fh, err := os.Open(filepath.Join("testdata", "hostile", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			f, err := Import(fh)
			if err == nil {
				t.Fatalf("imported: %d params, input %v", len(f.Params), f.Config.Input)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			for _, s := range tc.text {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(tc.file, "pads") || strings.Contains(tc.file, "input") {
				if !errors.Is(err, limits.ErrTooLarge) {
					t.Errorf("error %v does not wrap limits.ErrTooLarge", err)
				}
			}
		})
	}
}

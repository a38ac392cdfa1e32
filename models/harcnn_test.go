package models

import (
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// har-cnn's global pooling frees the window: any length from 4 steps up
// builds, with the parameters of the default window (the first
// convolution alone grows with the channels), and gives one logit per
// class.
func TestHARCNNWindows(t *testing.T) {
	for _, tc := range []struct {
		c, l, classes, params int
	}{
		{3, 128, 6, 23910},
		{3, 64, 6, 23910},
		{3, 4, 2, 23910 - 4*(64+1)}, // 2 classes: fc has 4 outputs fewer
		{9, 128, 6, 23910 + 6*32*7}, // 6 more input channels in conv1
	} {
		net, err := Build(cpu.NewCPU(), "har-cnn", Config{Classes: tc.classes, Input: solver.Shape{C: tc.c, H: 1, W: tc.l}})
		if err != nil {
			t.Fatalf("%dx%d: %v", tc.c, tc.l, err)
		}
		if got := net.NumParams(); got != tc.params {
			t.Errorf("%dx%d, %d classes: %d parameters, want %d", tc.c, tc.l, tc.classes, got, tc.params)
		}
		if net.Out.Size() != tc.classes {
			t.Errorf("%dx%d: %d outputs, want %d", tc.c, tc.l, net.Out.Size(), tc.classes)
		}
	}
	if _, err := Build(cpu.NewCPU(), "har-cnn", Config{Input: solver.Shape{C: 3, H: 1, W: 3}}); err == nil {
		t.Error("har-cnn on windows of 3 steps built; two pools of 2 leave nothing")
	}
}

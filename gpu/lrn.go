package gpu

import "fmt"

// LRNGeom is the geometry of a local response normalization across
// channels (ONNX LRN, PyTorch nn.LocalResponseNorm, AlexNet's and
// GoogLeNet's Caffe layer): x and y are N×C×HW, and
//
//	y[n,c,p] = x[n,c,p] · s[n,c,p]^-Beta,
//	s[n,c,p] = Bias + Alpha/Size · Σ x[n,i,p]² over Lo(c) <= i <= Hi(c),
//
// with the window of ONNX's definition: from c - floor((Size-1)/2) to
// c + ceil((Size-1)/2), clipped to the channels (PyTorch's window is the
// same for odd sizes, the ones models use).
type LRNGeom struct {
	N, C, HW          int
	Size              int
	Alpha, Beta, Bias float32
}

// Before and After are the channels the window reaches below and above c.
func (g LRNGeom) Before() int { return (g.Size - 1) / 2 }

// After: see Before.
func (g LRNGeom) After() int { return g.Size / 2 }

// Check panics unless g is usable and x holds N×C×HW elements: the
// callers (solver's LRN layer) set it up from checked shapes, so a
// mismatch is a bug of ours.
func (g LRNGeom) Check(what string, bufs ...Buffer) {
	if g.N < 0 || g.C <= 0 || g.HW <= 0 || g.Size <= 0 || !(g.Bias > 0) {
		panic(fmt.Sprintf("gpu: %s: geometry %+v", what, g))
	}
	for _, b := range bufs {
		if b.Len() != g.N*g.C*g.HW {
			panic(fmt.Sprintf("gpu: %s: %d elements for %d×%d×%d", what, b.Len(), g.N, g.C, g.HW))
		}
	}
}

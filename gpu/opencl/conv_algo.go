//go:build opencl

package opencl

import (
	"fmt"
	"log/slog"

	"github.com/cotrain/cotrain/gpu"
)

// Convolution algorithms beside im2col.
//
// A convolution runs im2col and GEMM (nn.go) unless one of the backend's
// algorithms takes it: FFT (fft.go) for all three passes of stride-1
// convolutions with small planes, then Winograd (winograd.go) for the
// forward and data gradient of 3×3 stride-1 ones. Each algorithm is a
// value built in New from its Config mode; it owns its scratch memory
// (transformed filters, spectra) and the set of geometries whose choice it
// has logged, and launches through the backend that built it. The
// backend's convolution methods dispatch over them (algoFor).

// convAlgo is a convolution algorithm of the OpenCL backend. Its buffers
// are the backend's, checked by the caller (convBufs); ws is the
// convolution's workspace, at least workspace(g) long when the algorithm
// runs g.
type convAlgo interface {
	// runs reports whether the algorithm computes g's forward and data
	// gradient, logging its choice once per geometry.
	runs(g *gpu.ConvGeom) bool
	// workspace is the workspace, in elements, of g's passes that it runs.
	workspace(g *gpu.ConvGeom) int
	// forward sets y = conv(x, w) + bias (bias may be nil), then the
	// activation act (0: none; 1 ReLU, 2 ReLU6).
	forward(g *gpu.ConvGeom, ys, xs, wsl, bs, ws *clBuf, act int)
	// backwardData sets dx from dy and w.
	backwardData(g *gpu.ConvGeom, dxs, dys, wsl, ws *clBuf)
	// backwardFilter sets dw from dy and x and reports true, or reports
	// false, having done nothing, where the filter gradient is left to
	// im2col.
	backwardFilter(g *gpu.ConvGeom, dws, dys, xs, ws *clBuf) bool
}

// algoFor returns the algorithm that runs g, in order of precedence, or
// nil for im2col.
func (o *OpenCL) algoFor(g *gpu.ConvGeom) convAlgo {
	if o.fftConv.runs(g) {
		return o.fftConv
	}
	if o.wino.runs(g) {
		return o.wino
	}
	return nil
}

// logChoice logs at debug level, once per geometry (batch aside), whether
// g runs the algorithm named what and why; seen holds the geometries
// logged.
func logChoice(log *slog.Logger, seen *map[gpu.ConvGeom]bool, g *gpu.ConvGeom, what string, use bool, why string) {
	key := *g
	key.N = 0
	if (*seen)[key] {
		return
	}
	if *seen == nil {
		*seen = map[gpu.ConvGeom]bool{}
	}
	(*seen)[key] = true
	log.Debug("gpu: opencl: convolution path", "geom", fmt.Sprintf("%+v", key), what, use, "why", why)
}

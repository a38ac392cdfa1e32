//go:build opencl

package opencl

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// Checks that the convolution paths beside im2col (FFT, Winograd) share:
// their mode setting, their GEMM variant timed per shape and their forward
// into a kept-column buffer granted before the path was turned on.

// checkModeSetting checks that parse accepts the modes "", auto, 0 and 1,
// and that New refuses a configuration set to bad, with want and
// naming bad, before it opens a device; what names the setting in errors
// (want is Err<what>).
func checkModeSetting(t *testing.T, what string, parse func(string) error, set func(cfg *Config, mode string), bad string, want error) {
	t.Helper()
	for _, m := range []string{"", "auto", "0", "1"} {
		if err := parse(m); err != nil {
			t.Errorf("mode %q: %v", m, err)
		}
	}
	cfg := envConfig()
	set(&cfg, bad)
	_, err := New(cfg)
	if !errors.Is(err, want) || !strings.Contains(err.Error(), `"`+bad+`"`) {
		t.Errorf("New with %s %q: %v, want Err%s naming the value", what, bad, err, what)
	}
}

// checkTimedVariant checks per-shape GEMM timing on g's forward (g set
// up; no bias), which must make one batched launch of shape key plus 3 other
// kernels: with a tuner that times nothing (tunerLike), its batched choices
// then hold pick() for key (picker names it in errors); with one that
// times, the forward gives the same bits, launches each variant at least
// twice (warm-up and timed) and keeps one for key, and the next forward
// launches no timing runs. o's tuner is restored when the test ends.
func checkTimedVariant(t *testing.T, o *OpenCL, r *rand.Rand, g gpu.ConvGeom, key batchShape, pick func() int, picker string) {
	t.Helper()
	x, w := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows())
	y := o.Alloc(g.N * g.K * g.OH * g.OW)
	o.Upload(x, gputest.Rand(r, x.Len()))
	o.Upload(w, gputest.Rand(r, w.Len()))
	ws := o.Alloc(o.ConvWorkspace(g))
	useTuner(t, o, tunerLike(o, false))
	o.ConvForward(g, y, x, w, nil, ws)
	want := download(o, y)
	if i, ok := o.tuner.batched[key]; !ok || i != pick() {
		t.Fatalf("untimed: variants by shape %v, want %v → %s", o.tuner.batched, key, picker)
	}
	useTuner(t, o, tunerLike(o, true))
	o.Fill(y, 0)
	before := o.ctx.launches
	o.ConvForward(g, y, x, w, nil, ws)
	launches := o.ctx.launches - before
	requireSameBits(t, "forward with the timed variant", download(o, y), want)
	if _, ok := o.tuner.batched[key]; !ok || len(o.gemms) < 2 {
		t.Fatalf("timed: variants by shape %v, want %v (of %d variants)", o.tuner.batched, key, len(o.gemms))
	}
	// 4 kernels, and each variant at least twice (warm-up and timed).
	if launches < 4+2*len(o.gemms) {
		t.Errorf("timed forward: %d launches, want at least %d", launches, 4+2*len(o.gemms))
	}
	before = o.ctx.launches
	o.ConvForward(g, y, x, w, nil, ws)
	if launches = o.ctx.launches - before; launches != 4 {
		t.Errorf("forward after timing: %d launches, want 4", launches)
	}
}

// checkKeptForward draws x, w, bias and dy for g from r (in that order) and
// checks that ConvForwardKeep into cols (a buffer granted before o's path
// was turned on) gives ConvForward's bits, as the path computes it; it
// returns x, w, dy and the workspace for the caller's check of the filter
// gradient from cols.
func checkKeptForward(t *testing.T, o *OpenCL, r *rand.Rand, g gpu.ConvGeom, cols gpu.Buffer) (x, w, dy twin, ws gpu.Buffer) {
	t.Helper()
	x = newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
	w = newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
	bias := newTwin(o, gputest.Rand(r, g.K))
	dy = newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
	y1, y2 := o.Alloc(dy.cl.Len()), o.Alloc(dy.cl.Len())
	ws = o.Alloc(o.ConvWorkspace(g))
	o.ConvForward(g, y1, x.cl, w.cl, bias.cl, ws)
	o.ConvForwardKeep(g, y2, x.cl, w.cl, bias.cl, ws, cols)
	requireSameBits(t, "ConvForwardKeep", download(o, y2), download(o, y1))
	return x, w, dy, ws
}

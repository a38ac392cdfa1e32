//go:build opencl

package opencl

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// BenchmarkOpenCLLaunch measures the host-side cost of one kernel launch:
// argument setting plus clEnqueueNDRangeKernel on kernels that do almost no
// work (one element), with a clFinish every 256 launches so the queue stays
// short. It is the figure that moves when the binding changes (the
// per-launch event, argument marshalling); BenchmarkOpenCLTrainStep shows
// what that means for a training step.
func BenchmarkOpenCLLaunch(b *testing.B) {
	o := openCLForTest(b)
	x, y := o.Alloc(1), o.Alloc(1)
	cases := []struct {
		name string
		run  func()
	}{
		{"fill/4args", func() { o.Fill(x, 1) }},
		{"axpy/6args", func() { o.Axpy(0.5, x, y) }},
		{"adam/16args", func() { o.AdamStep(x, y, x, y, 1e-3, 0.9, 0.999, 1e-8, 0, 1) }},
		{"gemm/25args", func() { o.Gemm(false, false, 1, 1, 1, 1, x, y, 0, x) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			must(o.Finish())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.run()
				if i%256 == 255 {
					must(o.Finish())
				}
			}
			must(o.Finish())
		})
	}
}

// TestOpenCLManyLaunches enqueues a long stream of dependent launches without
// waiting (each reads what the previous one wrote) and checks the result: the
// queue must stay in order and no per-launch resource may run out.
func TestOpenCLManyLaunches(t *testing.T) {
	o := openCLForTest(t)
	x := o.Alloc(3)
	const launches = 20000
	for i := 0; i < launches; i++ {
		o.Axpy(1, o.View(x, 0, 1), o.View(x, 1, 1)) // x[1] += x[0]
		if i == 0 {
			o.Fill(o.View(x, 0, 1), 1) // from now on x[0] = 1
		}
	}
	got := download(o, x)
	if want := float32(launches - 1); got[1] != want || got[0] != 1 || got[2] != 0 {
		t.Errorf("after %d launches x = %v, want [1 %v 0]", launches, got, want)
	}
}

// TestOpenCLArgCache launches one kernel with arguments that change, repeat
// and change back: an argument is set again only when it differs from the
// last launch's, which must never leave a stale buffer or scalar in place.
func TestOpenCLArgCache(t *testing.T) {
	o := openCLForTest(t)
	x, y := o.Alloc(4), o.Alloc(4)
	o.Fill(x, 1)
	o.Fill(y, 2)
	o.Fill(o.View(x, 2, 2), 3) // same buffer as before, other offset and length
	o.Fill(y, 2)               // every argument as two launches ago
	o.Fill(o.View(y, 0, 1), 5) // new offset and length, value unchanged from none
	o.Axpy(2, x, y)            // another kernel between
	o.Fill(o.View(x, 0, 1), 3) // fill again: buffer x after y
	gx, gy := download(o, x), download(o, y)
	if want := []float32{3, 1, 3, 3}; !slices.Equal(gx, want) {
		t.Errorf("x = %v, want %v", gx, want)
	}
	if want := []float32{7, 4, 8, 8}; !slices.Equal(gy, want) {
		t.Errorf("y = %v, want %v", gy, want)
	}
}

// TestOpenCLProfile checks the per-kernel timing: launches counted by
// kernel, nothing recorded once it is off.
func TestOpenCLProfile(t *testing.T) {
	o := openCLForTest(t)
	x := o.Alloc(1000)
	o.Profile(true)
	o.Fill(x, 1)
	o.Fill(x, 2)
	o.Scale(x, 3)
	prof := o.Profile(false)
	counts := map[string]int{}
	for _, kt := range prof {
		counts[kt.Name] = kt.Launches
		if kt.Total <= 0 {
			t.Errorf("%s: time %v", kt.Name, kt.Total)
		}
	}
	if counts["fill"] != 2 || counts["scale"] != 1 || len(counts) != 2 {
		t.Errorf("profile %+v, want fill twice and scale once", prof)
	}
	o.Fill(x, 4)
	if again := o.Profile(false); len(again) != 0 {
		t.Errorf("profiled while off: %+v", again)
	}
}

// TestOpenCLLaunchError: a launch the driver refuses (a work-group larger
// than any device allows) is a *CLError naming the call and the kernel.
func TestOpenCLLaunchError(t *testing.T) {
	o := openCLForTest(t)
	x := o.Alloc(4)
	err := o.ctx.launch(o.k[kFill], []int{1 << 22}, []int{1 << 22}, o.buf(x).m, 0, 4, float32(1))
	var ce *CLError
	if !errors.As(err, &ce) || ce.Code >= 0 || !strings.Contains(err.Error(), "clEnqueueNDRangeKernel") || !strings.Contains(err.Error(), "fill") {
		t.Errorf("launch error %v, want a *CLError from clEnqueueNDRangeKernel naming fill", err)
	}
	o.Fill(x, 2) // the queue still works
	if got := download(o, x); got[3] != 2 {
		t.Errorf("after the refused launch: %v", got)
	}
}

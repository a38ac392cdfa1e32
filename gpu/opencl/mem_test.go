//go:build opencl

package opencl

import (
	"errors"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// mustPanicWith runs f and checks it panics with an error wrapping want.
func mustPanicWith(t *testing.T, what string, want error, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, want) {
			t.Errorf("%s: panic %v, want %v", what, r, want)
		}
	}()
	f()
}

// TestOpenCLMemory checks, on a backend of its own, that dropped buffers are
// reclaimed before the live bytes pass the budget, and that Close frees
// every buffer, referenced or not, after which using one is a clear error.
func TestOpenCLMemory(t *testing.T) {
	shared := openCLForTest(t) // skips without a device
	cfg := envConfig()
	cfg.Index, cfg.Tune, cfg.GemmVariants = shared.info.Index, false, []string{"32x32/4x4/k16"}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()

	const mib = 1 << 20
	o.ctx.mem.budget = 8 * mib
	base := o.ctx.mem.liveBytes()
	var peak int64
	for i := 0; i < 64; i++ { // 64 MiB in all, each buffer dropped at once
		b := o.Alloc(mib / 4)
		o.Fill(b, float32(i))
		peak = max(peak, o.ctx.mem.liveBytes()-base)
	}
	if o.ctx.mem.gcs == 0 || peak > 12*mib {
		t.Errorf("64 dropped 1 MiB buffers: %d collections, peak %d MiB live (budget 8)", o.ctx.mem.gcs, peak/mib)
	}
	t.Logf("%d collections, peak %.1f MiB live", o.ctx.mem.gcs, float64(peak)/mib)
	live, most, ok := gpu.DeviceBytes(o)
	if !ok || live != o.ctx.mem.liveBytes() || most < base+peak || most < live {
		t.Errorf("DeviceBytes: live %d, peak %d, ok %v; want live %d and a peak of at least %d", live, most, ok, o.ctx.mem.liveBytes(), base+peak)
	}

	kept := o.Alloc(100)
	view := o.View(kept, 10, 20)
	o.Fill(kept, 1)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if n := o.ctx.mem.liveBytes(); n != 0 {
		t.Errorf("%d bytes live after Close", n)
	}
	if err := o.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	mustPanicWith(t, "Download after Close", errFreed, func() { download(o, view) })
	mustPanicWith(t, "Upload after Close", errFreed, func() { o.Upload(view, make([]float32, 20)) })
	mustPanicWith(t, "Fill after Close", errClosed, func() { o.Fill(kept, 2) })
	mustPanicWith(t, "Alloc after Close", errClosed, func() { o.Alloc(5) })
	mustPanicWith(t, "Finish after Close", errClosed, func() { must(o.Finish()) })
}

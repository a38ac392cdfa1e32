//go:build opencl

package opencl

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// The pinned staging path (stage.go) is checked against the direct
// path: data uploaded one way and downloaded the other must come back with
// the same bits. PoCL shares the host's memory, so its backends do not
// stage on their own (StagingAuto); the tests force staging on, with
// geometries of a few KiB so that small buffers cross chunk and ring
// boundaries.

// withStaging sets o's staging geometry until the test ends.
func withStaging(t *testing.T, o *OpenCL, min, chunk, slots int) {
	t.Helper()
	st := &o.ctx.st
	on, oldMin, oldChunk, oldSlots, log := st.on, st.min, st.chunk, st.nsl, st.log
	must(o.ctx.setupStaging(true, min, chunk, slots, nil))
	t.Cleanup(func() { must(o.ctx.setupStaging(on, oldMin, oldChunk, oldSlots, log)) })
}

func TestOpenCLStagingRoundTrip(t *testing.T) { bothStorages(t, testOpenCLStagingRoundTrip) }

func testOpenCLStagingRoundTrip(t *testing.T, o *OpenCL) {
	const minBytes = 4000 // 1000 floats
	r := rand.New(rand.NewPCG(5, 6))
	// Chunks of a whole number of floats and not (a float split across two
	// chunks), rings of one slot (every chunk waits for the one before) to
	// three.
	for _, g := range []struct{ chunk, slots int }{{1334, 2}, {4096, 3}, {997, 1}} {
		t.Run(fmt.Sprintf("chunk=%d,slots=%d", g.chunk, g.slots), func(t *testing.T) {
			withStaging(t, o, minBytes, g.chunk, g.slots)
			lens := []int{minBytes/4 - 1, minBytes / 4, minBytes/4 + 1}
			for _, k := range []int{g.slots, g.slots + 1, 3*g.slots + 2} {
				n := k * g.chunk / 4
				lens = append(lens, n-1, n, n+1)
			}
			for _, n := range lens {
				for _, off := range []int{0, 3} {
					for _, way := range []struct{ up, down bool }{{true, true}, {true, false}, {false, true}} {
						stagingRoundTrip(t, o, r, n, off, way.up, way.down)
					}
				}
			}
		})
	}
}

// stagingRoundTrip uploads n values into a view at off of a buffer holding a
// sentinel, staged or not, and downloads the whole buffer, staged or not:
// the view must hold the values' bits, the rest the sentinel, and the bytes
// must be counted once each way.
func stagingRoundTrip(t *testing.T, o *OpenCL, r *rand.Rand, n, off int, upStaged, downStaged bool) {
	t.Helper()
	const sentinel = 7.5 // exact in half
	data := make([]float32, n)
	for i := range data {
		if o.half { // values half storage keeps exactly
			data[i] = float32(r.Float64()*2 - 1)
		} else { // any bits, NaN payloads included: nothing computes on them
			data[i] = math.Float32frombits(r.Uint32())
		}
	}
	data = forStorage(o, data)
	all := o.Alloc(off + n + 5)
	o.Fill(all, sentinel)
	st := &o.ctx.st
	staged0 := st.staged
	up0, down0 := o.Transferred()

	st.on = upStaged
	o.Upload(o.View(all, off, n), data)
	st.on = downStaged
	got := download(o, all)
	st.on = true

	what := fmt.Sprintf("%d floats at %d, upload staged %v, download staged %v", n, off, upStaged, downStaged)
	for i, v := range got {
		want := float32(sentinel)
		if i >= off && i < off+n {
			want = data[i-off]
		}
		if math.Float32bits(v) != math.Float32bits(want) {
			t.Fatalf("%s: element %d is %#08x, want %#08x", what, i, math.Float32bits(v), math.Float32bits(want))
		}
	}
	var wantStaged int64
	if upStaged && 4*n >= st.min {
		wantStaged += int64(4 * n)
	}
	if downStaged && 4*len(got) >= st.min {
		wantStaged += int64(4 * len(got))
	}
	if d := st.staged - staged0; d != wantStaged {
		t.Errorf("%s: %d bytes staged, want %d", what, d, wantStaged)
	}
	up, down := o.Transferred()
	if up-up0 != int64(4*n) || down-down0 != int64(4*len(got)) {
		t.Errorf("%s: %d bytes up and %d down counted, want %d and %d", what, up-up0, down-down0, 4*n, 4*len(got))
	}
}

// TestOpenCLStagingFallback makes the driver refuse the pinned buffer (a
// size over any device's allocation limit): transfers must then go straight
// from Go memory, correctly, with one debug line saying why.
func TestOpenCLStagingFallback(t *testing.T) {
	o := openCLForTest(t)
	withStaging(t, o, 4, 1<<50, 1)
	var logs bytes.Buffer
	o.ctx.st.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	staged0 := o.ctx.st.staged
	b := o.Alloc(100)
	for range 3 {
		data := gputest.Rand(rand.New(rand.NewPCG(7, 8)), 100)
		o.Upload(b, data)
		got := download(o, b)
		for i := range got {
			if got[i] != forStorage(o, data)[i] {
				t.Fatalf("element %d: %g, want %g", i, got[i], data[i])
			}
		}
	}
	if !o.ctx.st.failed || o.ctx.st.staged != staged0 {
		t.Errorf("failed %v, %d bytes staged: want the direct path after the refusal", o.ctx.st.failed, o.ctx.st.staged-staged0)
	}
	// PoCL refuses the buffer; NVIDIA's driver makes it lazily and refuses
	// its mapping.
	refused := strings.Contains(logs.String(), "clCreateBuffer CL_MEM_ALLOC_HOST_PTR") || strings.Contains(logs.String(), "clEnqueueMapBuffer")
	if n := strings.Count(logs.String(), "no pinned staging memory"); n != 1 || !refused {
		t.Errorf("log %q: want one line naming the refused call", logs.String())
	}
}

// TestOpenCLStagingRelease opens and closes contexts that stage: releasing
// must unmap and free the pinned buffer, so the process's resident memory
// must not grow by the rounds' pinned memory (each round writes all of it),
// and a context must stage again after its stage was released. (Device
// buffers are kept small: on PoCL their memory comes from allocators that
// keep freed memory, which would blur the count.)
func TestOpenCLStagingRelease(t *testing.T) {
	dev := openCLForTest(t).ctx.dev
	const chunk, slots, rounds = 16 << 20, 2, 24 // 32 MiB pinned per round, 768 MiB if leaked
	src := make([]byte, 1<<20+12)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, len(src))
	var rss0 int64
	for i := range rounds + 1 {
		if i == 1 { // after a first round: what a driver sets up once is not counted
			rss0 = residentBytes(t)
		}
		c, err := newContext(dev)
		if err != nil {
			t.Fatal(err)
		}
		must(c.setupStaging(true, 1, chunk, slots, nil))
		m, err := c.allocSized(len(src), 1)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time after releasing the stage: made again
			clear(dst)
			if err := c.write(m, 0, bptr(src), len(src)); err != nil {
				t.Fatal(err)
			}
			if err := c.read(bptr(dst), m, 0, len(dst)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst, src) || c.st.mem == nil {
				t.Fatalf("round %d: round trip equal %v, staged %v", i, bytes.Equal(dst, src), c.st.mem != nil)
			}
			for j := range c.st.host { // resident, all of it
				c.st.host[j] = byte(j)
			}
			if err := c.releaseStage(); err != nil {
				t.Fatal(err)
			}
		}
		must(c.write(m, 0, bptr(src), len(src))) // staged again, released by release
		clear(c.st.host)
		if err := c.release(); err != nil {
			t.Fatal(err)
		}
		if c.st.mem != nil || c.st.host != nil {
			t.Fatalf("round %d: staging memory still held after release", i)
		}
	}
	if grown := residentBytes(t) - rss0; grown > rounds*slots*chunk/4 {
		t.Errorf("resident memory grew by %d MiB over %d rounds of %d MiB pinned", grown>>20, rounds, slots*chunk>>20)
	} else {
		t.Logf("resident memory grew by %d MiB over %d rounds of %d MiB pinned", grown>>20, rounds, slots*chunk>>20)
	}
}

// residentBytes is the process's resident memory (Linux), or skips.
func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Skipf("/proc/self/statm: %v", err)
	}
	return pages * int64(os.Getpagesize())
}

func TestOpenCLStagingMode(t *testing.T) {
	for _, c := range []struct {
		mode    string
		unified bool
		want    bool
	}{
		{"", false, true}, {"", true, false}, {StagingAuto, false, true}, {StagingAuto, true, false},
		{StagingOn, true, true}, {StagingOff, false, false},
	} {
		got, err := stagingOn(c.mode, gpu.DeviceInfo{HostUnified: c.unified})
		if err != nil || got != c.want {
			t.Errorf("stagingOn(%q, unified %v) = %v, %v; want %v", c.mode, c.unified, got, err, c.want)
		}
	}
	cfg := envConfig()
	cfg.Staging = "pinned"
	_, err := New(cfg)
	if !errors.Is(err, ErrStaging) || !strings.Contains(err.Error(), `"pinned"`) {
		t.Errorf("New with Staging %q: %v, want ErrStaging naming the value", cfg.Staging, err)
	}
}

// bptr is the address of b's first byte.
func bptr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// TestConfigFromEnv checks that a COTRAIN_OPENCL_* variable holding a
// value it does not take is refused with an error naming it, that the
// values it takes are taken, and that a mode New refuses makes Open("auto")
// fail rather than fall back to the CPU. It sets no environment: the
// variables come through the lookup, as the binaries pass os.LookupEnv.
func TestConfigFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(name string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == name {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	for _, c := range []struct{ name, value string }{
		{"COTRAIN_OPENCL_TUNE", "false"}, {"COTRAIN_OPENCL_ONE_QUEUE", "yes"}, {"COTRAIN_OPENCL_RED_WG", "abc"},
		{"COTRAIN_OPENCL_RED_WG", "-8"}, {"COTRAIN_OPENCL_FUSE", "off"}, {"COTRAIN_OPENCL_EPILOGUE", "no"},
	} {
		_, err := ConfigFromEnv(env(c.name, c.value))
		if !errors.Is(err, ErrEnv) || !errors.Is(err, gpu.ErrConfig) || !strings.Contains(err.Error(), strconv.Quote(c.value)) {
			t.Errorf("%s=%s: %v, want an ErrEnv naming %q", c.name, c.value, err, c.value)
		}
	}
	for _, c := range []struct{ name, value string }{
		{"COTRAIN_OPENCL_STAGING", "maybe"}, {"COTRAIN_OPENCL_WINOGRAD", "2"}, {"COTRAIN_OPENCL_FFT", "yes"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			cfg, err := ConfigFromEnv(env(c.name, c.value))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(cfg); !errors.Is(err, gpu.ErrConfig) || !strings.Contains(err.Error(), strconv.Quote(c.value)) {
				t.Fatalf("New: %v, want a gpu.ErrConfig naming %q", err, c.value)
			}
			b, err := gpu.Open("auto", gpu.OpenOptions{Config: map[string]any{"opencl": cfg}})
			if b != nil || !errors.Is(err, gpu.ErrConfig) {
				t.Errorf("Open(auto): %v, %v: want the configuration error, not a fallback", b, err)
			}
		})
	}
	cfg, err := ConfigFromEnv(env("COTRAIN_OPENCL_TUNE", "0", "COTRAIN_OPENCL_ONE_QUEUE", "1", "COTRAIN_OPENCL_RED_WG", "64",
		"COTRAIN_OPENCL_FUSE", "0", "COTRAIN_OPENCL_EPILOGUE", "0", "COTRAIN_OPENCL_CACHE", "off"))
	if err != nil || cfg.Tune || !cfg.OneQueue || cfg.ReductionWG != 64 || !cfg.NoFuse || !cfg.NoEpilogue || cfg.CacheDir != "" {
		t.Errorf("valid values: %+v, %v", cfg, err)
	}
	cfg, err = ConfigFromEnv(env("COTRAIN_OPENCL_FUSE", "1", "COTRAIN_OPENCL_EPILOGUE", "1", "COTRAIN_OPENCL_CACHE", "/x"))
	if err != nil || cfg.NoFuse || cfg.NoEpilogue || cfg.CacheDir != "/x" {
		t.Errorf("COTRAIN_OPENCL_FUSE=1, COTRAIN_OPENCL_EPILOGUE=1: %+v, %v", cfg, err)
	}
}

//go:build opencl

package opencl

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/jgillich/go-opencl/cl"
)

// Device memory.
//
// A Buffer has no Free: a network's buffers live as long as the network,
// and the cl package releases a cl_mem when its Go object is collected. Two
// things that leaves open are handled here.
//
//  1. A worker that reconnects builds a new network on the same backend and
//     drops the old one. The old buffers are garbage, but the Go heap barely
//     grew (a buffer is a few words on the host), so the collector may not
//     run for a long time while the device fills up. The context therefore
//     counts the bytes of live allocations (a cleanup subtracts them when an
//     allocation is collected) and, before an allocation that would take
//     the total over the budget (half of the device's memory), runs the
//     collector and waits briefly for the cleanups. An allocation the driver
//     refuses is retried once after the same.
//  2. Close must free what the backend allocated, not leave it to the
//     collector: the context keeps a weak pointer to every allocation and
//     Close releases those still alive. Using such a buffer afterwards is an
//     error (errFreed), not a read of freed device memory.

// errFreed is returned when a buffer of a closed backend is used.
var errFreed = errors.New("gpu: opencl: buffer used after the backend was closed")

// errClosed is returned when a closed backend is used.
var errClosed = errors.New("gpu: opencl: backend used after Close")

// clMem is one allocation of n elements of 4 bytes (float32 or int32), or
// of 2 bytes (a half-storage backend's Buffers).
type clMem struct {
	mem   *cl.MemObject
	n     int
	freed bool   // released by Close
	use   uint64 // the last command of the compute queue naming it (clContext.seq; xfer.go)
}

// memTracker counts and remembers a context's live allocations.
type memTracker struct {
	mu    sync.Mutex
	live  map[uint64]weak.Pointer[clMem]
	next  uint64
	bytes atomic.Int64 // bytes of allocations not yet collected or freed
	peak  atomic.Int64 // the most bytes ever held at once

	budget int64 // live bytes above which alloc collects first (0: never)
	since  int64 // bytes allocated since the last collection alloc forced
	gcs    int   // collections alloc forced (for tests)
}

// alloc creates a buffer of n elements of 4 bytes.
func (c *clContext) alloc(n int) (*clMem, error) { return c.allocSized(n, 4) }

// allocSized creates a buffer of n elements of size bytes.
func (c *clContext) allocSized(n, size int) (*clMem, error) {
	if c.ctx == nil {
		return nil, errClosed
	}
	bytes := int64(size) * int64(n)
	t := &c.mem
	// Collect only after a quarter of the budget was allocated since the
	// last time, so that a live set legitimately near the budget does not
	// collect at every allocation.
	if t.budget > 0 && t.bytes.Load()+bytes > t.budget && t.since > t.budget/4 {
		t.collect(t.budget - bytes)
	}
	m, err := c.ctx.CreateEmptyBuffer(cl.MemReadWrite, int(bytes))
	if err != nil && t.bytes.Load() > 0 {
		t.collect(0)
		m, err = c.ctx.CreateEmptyBuffer(cl.MemReadWrite, int(bytes))
	}
	if err != nil {
		return nil, clWrap("clCreateBuffer", err)
	}
	cm := &clMem{mem: m, n: n}
	t.track(cm, bytes)
	return cm, nil
}

func (t *memTracker) track(m *clMem, bytes int64) {
	t.mu.Lock()
	if t.live == nil {
		t.live = map[uint64]weak.Pointer[clMem]{}
	}
	id := t.next
	t.next++
	t.live[id] = weak.Make(m)
	t.mu.Unlock()
	now := t.bytes.Add(bytes)
	for p := t.peak.Load(); now > p; p = t.peak.Load() {
		if t.peak.CompareAndSwap(p, now) {
			break
		}
	}
	t.since += bytes
	// The cleanup must not refer to m (it would keep m alive); the cl
	// package's own finalizer on m.mem releases the cl_mem.
	runtime.AddCleanup(m, func(id uint64) { t.forget(id, bytes) }, id)
}

func (t *memTracker) forget(id uint64, bytes int64) {
	t.mu.Lock()
	if _, ok := t.live[id]; ok {
		delete(t.live, id)
		t.bytes.Add(-bytes)
	}
	t.mu.Unlock()
}

// collect runs the garbage collector and waits up to 50 ms for the cleanups
// of collected buffers to bring the live bytes to target or below.
func (t *memTracker) collect(target int64) {
	t.gcs++
	t.since = 0
	runtime.GC()
	for deadline := time.Now().Add(50 * time.Millisecond); t.bytes.Load() > target && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// freeAll releases every allocation still alive and marks it freed.
func (t *memTracker) freeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, w := range t.live {
		if m := w.Value(); m != nil {
			m.mem.Release()
			m.freed = true
		}
		delete(t.live, id)
	}
	t.bytes.Store(0)
}

// liveBytes is the size of the allocations not yet collected or freed.
func (t *memTracker) liveBytes() int64 { return t.bytes.Load() }

// DeviceBytes reports the bytes of the device buffers this backend has
// allocated that are alive now (not yet collected or freed by Close) and the
// most that were at once since it opened (gpu.DeviceBytes). Buffers the
// collector has not yet reclaimed count: the figure is what the device
// holds, as torch.cuda.max_memory_allocated counts the tensors PyTorch
// holds (its allocator's cache aside). The pinned host staging buffer and
// the driver's own memory (kernels, queues) are not in it.
func (b *OpenCL) DeviceBytes() (live, peak int64) {
	return b.ctx.mem.liveBytes(), b.ctx.mem.peak.Load()
}

//go:build opencl

package opencl

import (
	"errors"
	"fmt"
	"log/slog"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/jgillich/go-opencl/cl"
)

// Large transfers through pinned memory.
//
// A write from ordinary (pageable) Go memory cannot be a DMA: the driver
// first copies it into pinned memory of its own. On a discrete GPU that can
// be far below the bus's speed (AlexNet's gradient, 244 MB, moved at 9 GB/s
// on the H100 machine, BenchmarkOpenCLUpload, 2026-11-26). A write whose source is
// pinned memory the driver knows is a DMA at the bus's speed; a buffer made
// with CL_MEM_ALLOC_HOST_PTR and mapped is such memory on NVIDIA's OpenCL
// (its best-practices guide recommends it for transfers).
//
// So a context whose Staging is on keeps one such buffer, mapped once for
// its whole life: a ring of stageSlots slots of stageChunk bytes. A write of
// at least stageMin bytes is cut into chunks; each chunk is copied from the
// Go memory into a free slot by several goroutines at once (one core's
// memory copy is slower than the bus), and its write is enqueued, without
// blocking, as soon as that copy is done, so the DMA of one chunk runs while
// the next is being copied. A slot is reused only after the write that read
// it has completed (its event), and write returns only after the last one
// has: Upload stays synchronous (the caller may reuse its slice at once) and
// nothing is in flight between two calls. A read runs the other way: reads
// of the first chunks into slots are enqueued at once, and each chunk is
// copied out while the following ones are on the bus.
//
// Smaller transfers, devices that share the host's memory (where pinning
// saves nothing and the copy into the slot would be one copy more), and
// drivers that refuse the buffer or its mapping go straight from the Go
// memory as before. The staging copies are not host↔device traffic: the
// bytes crossing are counted once (OpenCL.Transferred).

// Staging modes (Config.Staging).
const (
	StagingAuto = "auto" // on where the device has memory of its own (DeviceInfo.HostUnified false)
	StagingOn   = "on"   // every large transfer, whatever the device (tests, measurements)
	StagingOff  = "off"  // never: every transfer straight from Go memory
)

// ErrStaging is returned for an Config.Staging value that is none of
// the modes.
var ErrStaging = fmt.Errorf("%w: staging mode", gpu.ErrConfig)

// Default staging geometry: transfers of 32 MiB or more are staged, in 16
// MiB chunks through 4 slots (64 MiB of pinned memory per backend). Two
// slots would already overlap one chunk's copy with another's DMA; four
// leave slack for a copy that a busy core delays. On the H100 machine 16
// MiB chunks moved AlexNet's gradient (244 MB) at 30.6 GB/s up and 33–35
// GB/s down, 4 MiB chunks at 15 and 20 GB/s, direct transfers at 9 and
// 13.7 (BenchmarkOpenCLUpload/Download, docs/opencl.md); a batch of 19.3 MB
// moved as fast direct as staged, and staging it made AlexNet's training
// step 0.25–0.4 ms slower (5.51 / 5.38 ms against 5.11 / 5.15 with
// COTRAIN_OPENCL_STAGING=off, bench_gpu.sh), so the threshold sits between.
const (
	defaultStageMin   = 32 << 20
	defaultStageChunk = 16 << 20
	defaultStageSlots = 4
	// stagePart is the smallest piece of a chunk one goroutine copies:
	// below it, handing the piece to a helper costs about what it saves.
	stagePart = 256 << 10
)

// stagingOn resolves mode for a device: whether large transfers are staged.
func stagingOn(mode string, info gpu.DeviceInfo) (bool, error) {
	switch mode {
	case "", StagingAuto:
		return !info.HostUnified, nil
	case StagingOn:
		return true, nil
	case StagingOff:
		return false, nil
	}
	return false, fmt.Errorf("%w %q: want %s, %s or %s", ErrStaging, mode, StagingAuto, StagingOn, StagingOff)
}

// stager is a context's staging state. The buffer is made on the first
// transfer that needs it, so a backend that never moves a large buffer pins
// nothing.
type stager struct {
	on              bool // staging wanted (stagingOn)
	failed          bool // the driver refused the buffer or its mapping: every transfer goes direct
	min, chunk, nsl int  // bytes: smallest staged transfer, slot size; slot count
	log             *slog.Logger

	mem  *cl.MemObject // the pinned buffer, nil until first needed
	host []byte        // its mapping, nsl*chunk bytes
	ptr  *cl.MappedMemObject
	ev   []*cl.Event // per slot: the transfer still using it, or nil

	th   sgemm.Thread // leads the parallel copies (on sgemm's helper goroutines, shared with the CPU backend)
	task copyTask
	// staged counts the bytes moved through the slots (tests check the
	// staged path ran).
	staged int64
}

// setupStaging sets the staging mode and geometry; the buffer of an
// earlier geometry is released first (tests change it on a live backend),
// and an error doing so is returned.
func (c *clContext) setupStaging(on bool, min, chunk, slots int, log *slog.Logger) error {
	err := c.releaseStage()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if min < 1 || chunk < 1 || slots < 1 {
		panic(fmt.Sprintf("gpu: opencl: staging geometry min %d, chunk %d, slots %d: want each >= 1", min, chunk, slots))
	}
	st := &c.st
	st.on, st.failed, st.min, st.chunk, st.nsl, st.log = on, false, min, chunk, slots, log
	return err
}

// staging reports whether a transfer of bytes goes through the slots,
// making them on first use. A driver that refuses them is logged once and
// never asked again.
func (c *clContext) staging(bytes int) bool {
	st := &c.st
	if !st.on || st.failed || bytes < st.min {
		return false
	}
	if st.mem != nil {
		return true
	}
	if err := c.makeStage(); err != nil {
		st.failed = true
		st.log.Debug("gpu: opencl: no pinned staging memory; large transfers go straight from Go memory", "err", err)
		return false
	}
	st.log.Debug("gpu: opencl: pinned staging", "slots", st.nsl, "chunk_bytes", st.chunk, "min_bytes", st.min)
	return true
}

// makeStage allocates and maps the pinned buffer.
func (c *clContext) makeStage() error {
	st := &c.st
	size := st.nsl * st.chunk
	m, err := c.ctx.CreateEmptyBuffer(cl.MemReadWrite|cl.MemAllocHostPtr, size)
	if err != nil {
		return clWrap("clCreateBuffer CL_MEM_ALLOC_HOST_PTR", err)
	}
	mp, ev, err := c.queue.EnqueueMapBuffer(m, true, cl.MapFlagRead|cl.MapFlagWrite, 0, size, nil)
	if ev != nil {
		ev.Release()
	}
	if err != nil {
		m.Release()
		return clWrap("clEnqueueMapBuffer", err)
	}
	st.mem, st.ptr = m, mp
	st.host = unsafe.Slice((*byte)(mp.Ptr()), size)
	st.ev = make([]*cl.Event, st.nsl)
	return nil
}

// releaseStage waits for the slots, unmaps and releases the buffer. The
// mode stays; a later large transfer maps a new buffer.
func (c *clContext) releaseStage() error {
	st := &c.st
	if st.mem == nil {
		return nil
	}
	err := c.waitSlots()
	ev, uerr := c.queue.EnqueueUnmapMemObject(st.mem, st.ptr, nil)
	err = errors.Join(err, done("clEnqueueUnmapMemObject", ev, uerr), clWrap("clFinish", c.queue.Finish()))
	st.mem.Release()
	st.mem, st.ptr, st.host, st.ev = nil, nil, nil, nil
	return err
}

// slot returns slot i's bytes.
func (st *stager) slot(i int) []byte { return st.host[i*st.chunk : (i+1)*st.chunk] }

// takeSlot waits for the transfer using slot i, if any, forgets it and
// returns its event (nil if none), which the caller releases.
func (c *clContext) takeSlot(i int) (*cl.Event, error) {
	ev := c.st.ev[i]
	if ev == nil {
		return nil, nil
	}
	c.st.ev[i] = nil
	return ev, clWrap("clWaitForEvents", cl.WaitForEvents([]*cl.Event{ev}))
}

// waitSlot waits for the transfer using slot i, if any, and forgets it.
func (c *clContext) waitSlot(i int) error {
	ev, err := c.takeSlot(i)
	if ev != nil {
		ev.Release()
	}
	return err
}

// waitSlots waits for every slot.
func (c *clContext) waitSlots() error {
	var err error
	for i := range c.st.ev {
		err = errors.Join(err, c.waitSlot(i))
	}
	return err
}

// abandon ends a staged transfer that failed half-way: nothing may still
// read or fill a slot when the call returns.
func (c *clContext) abandon(err error) error {
	return errors.Join(err, c.waitSlots(), c.finish())
}

// writeStaged writes src to m at byte offset off through the slots, on q
// (either queue of the context: xfer.go), the first chunk waiting for
// the events of wait (nil: none). It returns the event of the last chunk's
// write, complete, which the caller releases: every chunk before it was
// written before it (q is in order).
func (c *clContext) writeStaged(q *cl.CommandQueue, m *clMem, off int, src []byte, wait []*cl.Event) (*cl.Event, error) {
	st := &c.st
	last := 0
	for i, pos := 0, 0; pos < len(src); i, pos = i+1, pos+st.chunk {
		s := i % st.nsl
		if err := c.waitSlot(s); err != nil {
			return nil, c.abandon(err)
		}
		n := min(st.chunk, len(src)-pos)
		dst := st.slot(s)[:n]
		st.copyPar(dst, src[pos:pos+n])
		ev, err := q.EnqueueWriteBuffer(m.mem, false, off+pos, n, unsafe.Pointer(&dst[0]), wait)
		if err != nil {
			return nil, c.abandon(done("clEnqueueWriteBuffer", ev, err))
		}
		wait = nil // the later chunks follow the first on q
		st.ev[s], last = ev, s
	}
	st.staged += int64(len(src))
	return c.takeLast(last)
}

// takeLast waits for every slot, and returns slot last's event (see takeSlot).
func (c *clContext) takeLast(last int) (*cl.Event, error) {
	var err error
	for i := range c.st.ev {
		if i != last {
			err = errors.Join(err, c.waitSlot(i))
		}
	}
	ev, lerr := c.takeSlot(last)
	if err = errors.Join(err, lerr); err != nil {
		if ev != nil {
			ev.Release()
		}
		return nil, err
	}
	return ev, nil
}

// readStaged reads len(dst) bytes of m at byte offset off through the
// slots, on the compute queue. It returns the event of the last chunk's
// read, complete, which the caller releases.
func (c *clContext) readStaged(dst []byte, m *clMem, off int) (*cl.Event, error) {
	st := &c.st
	chunks := (len(dst) + st.chunk - 1) / st.chunk
	span := func(i int) (int, int) { return i * st.chunk, min(st.chunk, len(dst)-i*st.chunk) }
	enqueue := func(i int) error {
		pos, n := span(i)
		s := i % st.nsl
		ev, err := c.queue.EnqueueReadBuffer(m.mem, false, off+pos, n, unsafe.Pointer(&st.slot(s)[0]), nil)
		if err != nil {
			return done("clEnqueueReadBuffer", ev, err)
		}
		st.ev[s] = ev
		return nil
	}
	for i := range min(st.nsl, chunks) {
		if err := enqueue(i); err != nil {
			return nil, c.abandon(err)
		}
	}
	var last *cl.Event
	for i := range chunks {
		s := i % st.nsl
		ev, err := c.takeSlot(s)
		if i == chunks-1 {
			last = ev
		} else if ev != nil {
			ev.Release()
		}
		if err != nil {
			if last != nil {
				last.Release()
			}
			return nil, c.abandon(err)
		}
		pos, n := span(i)
		st.copyPar(dst[pos:pos+n], st.slot(s)[:n])
		if next := i + st.nsl; next < chunks {
			if err := enqueue(next); err != nil {
				return nil, c.abandon(err)
			}
		}
	}
	st.staged += int64(len(dst))
	return last, nil
}

// copyPar copies src to dst (same length) on up to GOMAXPROCS goroutines, in
// pieces of at least stagePart bytes.
func (st *stager) copyPar(dst, src []byte) {
	parts := min(st.th.Threads(), (len(src)+stagePart-1)/stagePart)
	if parts <= 1 {
		copy(dst, src)
		return
	}
	st.task = copyTask{dst: dst, src: src, parts: parts}
	st.th.Parallel(parts, &st.task)
	st.task = copyTask{} // hold no reference to the caller's memory
}

// copyTask is one parallel copy: part i copies its share of src.
type copyTask struct {
	dst, src []byte
	parts    int
}

// Run implements sgemm.Task.
func (t *copyTask) Run(_ *sgemm.Thread, i int) {
	lo, hi := i*len(t.src)/t.parts, (i+1)*len(t.src)/t.parts
	copy(t.dst[lo:hi], t.src[lo:hi])
}

// goBytes is the n bytes at p, Go memory that the caller keeps alive.
func goBytes(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }

//go:build opencl

package opencl

import (
	"unsafe"

	"github.com/jgillich/go-opencl/cl"
)

// Uploads that overlap the kernels: a second queue for writes.
//
// With one in-order queue, an Upload waits for every kernel enqueued before
// it, even those that never touch the buffer written: a training step's
// batch upload starts only after the previous step's backward pass and
// optimizer step, and the device idles during the copy and while the host
// then enqueues the next forward pass (on the H100 an AlexNet step took
// 11.86 ms uploading its batch against 8.47 ms with the batch resident,
// for an upload of 1.3 ms alone).
//
// So a context has two in-order queues on its device: the compute queue
// (kernels, copies, reads) and the transfer queue (clContext.xfer), which
// carries writes. Two rules keep every order a caller can see the same as
// with one queue:
//
//  1. Write after use. A write may go on the transfer queue only if no
//     command of the compute queue that names the written allocation can
//     still be unfinished. Each command of the compute queue that names
//     buffers gets a number (clContext.seq), recorded on each allocation it
//     names (clMem.use: a kernel's buffer arguments, a copy's source and
//     destination, a read's source, a write that went on the compute queue).
//     A blocking read on the compute queue returns only after every command
//     before it: its event becomes syncEv and its number doneSeq. A write to
//     an allocation with use <= doneSeq goes on the transfer queue and waits
//     (event wait list) for syncEv, which is complete by then: it costs the
//     transfer nothing, and it is the synchronisation the OpenCL
//     specification asks for between queues sharing a memory object (the
//     commands of the other queue wait for an event of the command that last
//     touched it). Any other write goes on the compute queue, in order
//     behind the kernels that use the allocation, exactly as with one queue.
//     The allocation is the unit: writing one view of an allocation waits
//     for kernels that use another view of it.
//  2. Use after write. After a write on the transfer queue, a barrier on the
//     compute queue waits for the write's event: every command enqueued
//     afterwards (a kernel reading the data, a Download of it, a write that
//     goes on the compute queue) runs after the data has landed.
//
// Writes stay blocking for the host, staged or not (the caller may reuse its
// slice on return). A blocking write promises no more than that: the driver
// may have copied the slice and still have the transfer queued (PoCL's has
// always landed; a staged write waits for its chunks), so several writes may
// be pending on the transfer queue. It is in order, and every compute
// command enqueued after a write follows it (rule 2), so the transfer queue
// needs no rule of its own. The case this is for is a caller that
// alternates two input buffers (solver.Trainer when OverlapsUploads): the
// upload for step i+1 writes the buffer step i-1 read, and step i's loss
// read passed after all of step i-1, so the upload runs while step i's
// backward pass is still on the device. A caller with one input buffer gets
// what one queue gave: its upload waits for the kernels that read it.

// use records that the command of the compute queue about to be enqueued
// names m, and returns that command's number.
func (c *clContext) use(m *clMem) uint64 {
	c.seq++
	m.use = c.seq
	return c.seq
}

// synced records that ev, an event of the compute queue that has been
// flushed, follows every command numbered up to seq.
func (c *clContext) synced(ev *cl.Event, seq uint64) {
	if c.syncEv != nil {
		c.syncEv.Release()
	}
	c.syncEv, c.doneSeq = ev, seq
}

// write copies bytes from src, Go memory the caller keeps alive, into m at
// byte offset off, and returns once src may be reused. It goes on the
// transfer queue when rule 1 above allows, else on the compute queue.
func (c *clContext) write(m *clMem, off int, src unsafe.Pointer, bytes int) error {
	if m.freed {
		return errFreed
	}
	c.up += int64(bytes)
	q := c.queue
	var wait []*cl.Event // nil, never empty: the cl package indexes a non-nil list
	if c.xfer != nil && m.use <= c.doneSeq {
		q = c.xfer
		if c.syncEv != nil {
			wait = []*cl.Event{c.syncEv}
		}
	} else {
		c.use(m)
	}
	var ev *cl.Event
	var err error
	if c.staging(bytes) {
		ev, err = c.writeStaged(q, m, off, goBytes(src, bytes), wait)
	} else {
		ev, err = q.EnqueueWriteBuffer(m.mem, true, off, bytes, src, wait)
		err = clWrap("clEnqueueWriteBuffer", err)
	}
	if err == nil && q == c.xfer {
		c.xferUp += int64(bytes)
		// Rule 2. The write was flushed: blocking, or waited for (staged).
		b, berr := c.queue.EnqueueBarrierWithWaitList([]*cl.Event{ev})
		err = done("clEnqueueBarrierWithWaitList", b, berr)
	}
	if ev != nil {
		ev.Release()
	}
	return err
}

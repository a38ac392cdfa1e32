package sim

import "container/heap"

// clock is the simulator's virtual time: a discrete-event scheduler. Events
// run one at a time, in order of time, and events due at the same time in
// the order they were scheduled (a sequence number breaks ties), so a run
// never depends on map order or on the Go scheduler. There are no
// goroutines and no wall clock: time moves only from one event to the next.
type clock struct {
	now int64 // nanoseconds since the start of the run
	seq uint64
	q   eventQueue
}

type event struct {
	at  int64
	seq uint64
	fn  func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// at schedules fn at time t; a time in the past runs at the current time
// (after the events already due then).
func (c *clock) at(t int64, fn func()) {
	if t < c.now {
		t = c.now
	}
	c.seq++
	heap.Push(&c.q, event{at: t, seq: c.seq, fn: fn})
}

// step runs the next event and reports whether there was one.
func (c *clock) step() bool {
	if len(c.q) == 0 {
		return false
	}
	e := heap.Pop(&c.q).(event)
	c.now = e.at
	e.fn()
	return true
}

// pending reports how many events are scheduled.
func (c *clock) pending() int { return len(c.q) }

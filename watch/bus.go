package watch

import (
	"sync"
	"sync/atomic"
	"time"
)

// Bus hands every event published to each attached sink, each on a
// goroutine of its own behind a bounded queue. Publish never blocks and
// never waits for a sink: a sink whose queue is full loses the event (it is
// counted in Dropped). That is what keeps observers off the hub's barrier:
// the driver publishes from its one goroutine and goes on at once.
//
// Events reach each sink in the order they were published. Close delivers
// what is queued and waits for the sinks to return.
type Bus struct {
	// Now stamps the events; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	sinks   []*sink
	closed  bool
	wg      sync.WaitGroup
	dropped atomic.Int64
}

type sink struct {
	in      chan Event
	handle  func(Event)
	dropped atomic.Int64
}

// Attach adds a sink: handle is called with every event published from now
// on, in order, on the sink's own goroutine; queue bounds the events waiting
// for it (at least 1). Attach after Close does nothing.
func (b *Bus) Attach(queue int, handle func(Event)) {
	b.attach(queue, handle)
}

// attach is Attach, returning the sink (nil after Close) so that its owner
// can read the sink's own drop count.
func (b *Bus) attach(queue int, handle func(Event)) *sink {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	s := &sink{in: make(chan Event, max(queue, 1)), handle: handle}
	b.sinks = append(b.sinks, s)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for e := range s.in {
			s.handle(e)
		}
	}()
	return s
}

// Publish stamps an event of kind with data and queues it for every sink.
// It never blocks. A nil *Bus, or a closed one, drops it.
func (b *Bus) Publish(kind string, data any) {
	if b == nil {
		return
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	e := Event{Kind: kind, Time: now(), Data: data}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	for _, s := range b.sinks {
		select {
		case s.in <- e:
		default:
			s.dropped.Add(1)
			b.dropped.Add(1)
		}
	}
}

// Dropped is the number of deliveries lost to full sink queues, all sinks
// together.
func (b *Bus) Dropped() int64 {
	if b == nil {
		return 0
	}
	return b.dropped.Load()
}

// Close stops taking events, lets every sink handle what it has queued,
// and waits for them. It is safe to call more than once.
func (b *Bus) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		for _, s := range b.sinks {
			close(s.in)
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
}

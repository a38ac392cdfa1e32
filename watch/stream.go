package watch

// This file is the Recorder's event streams: what a live view (the
// dashboard's /api/events, in watch/web) subscribes to. It holds no
// network code: a stream is a channel of JSON lines.

// Message is one event as a stream carries it: its number among the events
// the Recorder has streamed (from 1) and its JSON (Event.MarshalJSON).
type Message struct {
	ID   uint64
	Data []byte
}

// Subscriber is one stream of the events a Recorder handles.
type Subscriber struct {
	ch chan Message
}

// C returns the stream's channel. It is closed when the subscriber is
// dropped: unsubscribed, or too slow (SubscriberQueue events waited).
func (s *Subscriber) C() <-chan Message { return s.ch }

// SubscriberQueue is how many events may wait for one stream; one that
// falls this far behind is dropped. MaxSubscribers bounds the streams open
// at once.
const (
	SubscriberQueue = 256
	MaxSubscribers  = 64
)

// Subscribe adds a stream of the events handled from now on, or returns
// nil when MaxSubscribers are open. Status.Clients counts the streams.
// Call Unsubscribe when done with it.
func (r *Recorder) Subscribe() *Subscriber {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.subs) >= MaxSubscribers {
		return nil
	}
	s := &Subscriber{ch: make(chan Message, SubscriberQueue)}
	r.subs[s] = struct{}{}
	r.version++ // Clients changed
	return s
}

// Unsubscribe removes s and closes its channel; a stream already dropped
// is left as it is.
func (r *Recorder) Unsubscribe(s *Subscriber) {
	r.mu.Lock()
	r.unsubscribe(s)
	r.mu.Unlock()
}

// unsubscribe is Unsubscribe with r.mu held.
func (r *Recorder) unsubscribe(s *Subscriber) {
	if _, ok := r.subs[s]; ok {
		r.version++
		delete(r.subs, s)
		close(s.ch)
	}
}

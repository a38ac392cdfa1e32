package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// network is the simulated network between the hub and the phones. A
// message takes Latency plus its size over Bandwidth; the medium decides
// what it waits for first:
//
//   - "shared" (Wi-Fi, the default): every transfer, up or down, takes the
//     access point's airtime in turn, first come first served, so transfers
//     never overlap. A unicast from the hub to every worker (how Merged goes
//     out) costs one airtime per worker.
//   - "links": each phone has a link of its own to the hub (both directions
//     share it); transfers to or from different phones overlap.
//   - "loopback": the hub runs on the phone itself (solo runs): no cost.
//
// The transfer through the access point is counted once (not phone→AP and
// AP→hub): the hub is taken to be wired to the access point.
type network struct {
	kind      string
	bytesPerS float64
	latency   int64 // ns
	air       int64 // shared: when the medium is next free
	links     map[string]int64
	bytes     int64 // bytes carried (not loopback)
	busy      int64 // ns the medium (or the links, summed) carried data

	// Faults (route): nil rng means a network that never fails.
	spec  NetworkSpec
	rng   *rand.Rand
	cuts  map[string][]window // partitions, by phone
	last  map[string]*[2]int64
	stats FaultStats
}

// window is a span of virtual time [from, to) in ns.
type window struct{ from, to int64 }

// FaultStats counts what the network's faults did to a run's messages.
type FaultStats struct {
	// Lost messages: drawn by Loss, or in flight on a connection that a
	// partition broke.
	Lost int
	// Delayed messages: by a retransmission, a spike or a partition the
	// connection survived (not by waiting behind another, in order).
	Delayed int
	// Reconnects are the connections a phone opened again after its last
	// one died (a partition, or the hub's registration timeout).
	Reconnects int
}

func newNetwork(n NetworkSpec, loopback bool) *network {
	w := &network{kind: n.Medium, bytesPerS: n.Bandwidth / 8, latency: n.Latency.Nanoseconds(),
		links: map[string]int64{}}
	if loopback {
		w.kind, w.latency = "loopback", 0
	}
	return w
}

// transfer schedules size bytes between the hub and phone, handed to the
// network at now: it returns when the transfer starts (after waiting for the
// medium), when its last byte is on the air, and when it arrives.
func (w *network) transfer(now int64, phone string, size int) (start, end, arrive int64) {
	if w.kind == "loopback" {
		return now, now, now
	}
	free := w.air
	if w.kind == "links" {
		free = w.links[phone]
	}
	start = max(now, free)
	end = start + int64(float64(float64(size)/w.bytesPerS*1e9)+0.5)
	if w.kind == "links" {
		w.links[phone] = end
	} else {
		w.air = end
	}
	w.bytes += int64(size)
	w.busy += end - start
	return start, end, end + w.latency
}

// validateFaults checks the fault fields (a Scenario built in code skips
// the parser's checks).
func (n NetworkSpec) validateFaults() error {
	for _, p := range []float64{n.Loss, n.Retransmit, n.Spike} {
		if !(p >= 0 && p < 1) {
			return fmt.Errorf("loss %v, retransmit %v, spike %v: want probabilities in [0, 1)", n.Loss, n.Retransmit, n.Spike)
		}
	}
	switch {
	case n.Retransmit > 0 && n.RTO <= 0:
		return fmt.Errorf("retransmit %v with a retransmission timeout of %v", n.Retransmit, n.RTO)
	case n.Spike > 0 && n.SpikeDelay <= 0:
		return fmt.Errorf("spike %v of %v", n.Spike, n.SpikeDelay)
	case n.ConnTimeout <= 0:
		return errors.New("conn-timeout must be positive")
	}
	return nil
}

// maxRetransmits bounds the resends of one segment: TCP gives a connection
// up after about 15; by then the RTO has backed off for minutes.
const maxRetransmits = 8

// withFaults arms the fault model: rng draws every loss and delay, cuts
// are the partitions by phone. A loopback network never fails.
func (w *network) withFaults(spec NetworkSpec, rng *rand.Rand, cuts map[string][]window) {
	if w.kind == "loopback" {
		return
	}
	w.spec, w.rng, w.cuts, w.last = spec, rng, cuts, map[string]*[2]int64{}
}

// cut returns the partition of phone that spans t, if any.
func (w *network) cut(phone string, t int64) (window, bool) {
	for _, c := range w.cuts[phone] {
		if t >= c.from && t < c.to {
			return c, true
		}
	}
	return window{}, false
}

// breaks reports whether the partition c outlasts the connection: the
// transport declares it dead at c.from + ConnTimeout.
func (w *network) breaks(c window) bool {
	return c.to-c.from > w.spec.ConnTimeout.Nanoseconds()
}

// route decides the fate of a message between the hub and phone (up: from
// the phone) that transfer scheduled on the air from start, to arrive at
// arrive: when it arrives, or lost. In this order:
//
//  1. a partition of the phone that overlaps the transfer holds it until
//     the partition ends (the transport resends it then) when the
//     connection survives, and loses it when the partition breaks the
//     connection;
//  2. Loss drops it outright;
//  3. Retransmit and Spike add delays;
//  4. a connection delivers in order: a message never arrives before the
//     one sent ahead of it in the same direction (head-of-line blocking).
//
// The airtime of a message is taken once, whatever happens to it: a
// resent segment is small next to a message, and a lost message was sent.
func (w *network) route(phone string, up bool, start, arrive int64) (int64, bool) {
	if w.rng == nil {
		return arrive, false
	}
	delayed := false
	for _, c := range w.cuts[phone] {
		if start < c.to && arrive > c.from {
			if w.breaks(c) {
				w.stats.Lost++
				return 0, true
			}
			arrive, delayed = max(arrive, c.to+(arrive-start)), true
		}
	}
	if w.spec.Loss > 0 && w.rng.Float64() < w.spec.Loss {
		w.stats.Lost++
		return 0, true
	}
	if w.spec.Retransmit > 0 {
		rto := w.spec.RTO.Nanoseconds()
		for i := 0; i < maxRetransmits && w.rng.Float64() < w.spec.Retransmit; i++ {
			arrive += rto << i
			delayed = true
		}
	}
	if w.spec.Spike > 0 && w.rng.Float64() < w.spec.Spike {
		arrive += int64((0.5 + float64(w.rng.Float64())) * float64(w.spec.SpikeDelay))
		delayed = true
	}
	if delayed {
		w.stats.Delayed++
	}
	l := w.last[phone]
	if l == nil {
		l = new([2]int64)
		w.last[phone] = l
	}
	dir := 0
	if up {
		dir = 1
	}
	arrive = max(arrive, l[dir])
	l[dir] = arrive
	return arrive, false
}

// forget starts phone's order afresh: its connection died, and a new one
// is a new stream.
func (w *network) forget(phone string) {
	if w.last != nil {
		delete(w.last, phone)
	}
}

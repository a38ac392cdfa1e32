package sim

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
	end = start + int64(float64(size)/w.bytesPerS*1e9+0.5)
	if w.kind == "links" {
		w.links[phone] = end
	} else {
		w.air = end
	}
	w.bytes += int64(size)
	w.busy += end - start
	return start, end, end + w.latency
}

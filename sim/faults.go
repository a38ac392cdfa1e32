package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/worker"
)

// This file is the runner's side of the network's faults (network.route
// decides each message's fate): partitions that outlast the connection,
// the worker's session dialling again, and the hub driver's registration
// timeout. It does what the real drivers do, with virtual time:
//
//   - A partition longer than NetworkSpec.ConnTimeout breaks the phone's
//     connection: at its start plus ConnTimeout both ends see it die (the
//     transport's keepalive). The hub's driver calls Core.Leave (the core
//     has usually dropped the phone already, after MaxMisses deadlines);
//     the phone's worker.Session dials again by the rule of
//     worker.DefaultDriverConfig (NextDial: backoff, then giving up at
//     ReconnectTimeout), each dial failing while the phone is still cut
//     off, and registers afresh with a new core.
//   - A connection whose Register the hub has not accepted within
//     hub.DefaultDriverConfig's RegisterTimeout is closed by the hub's
//     driver, and the phone's session dials again: how a lost Register is
//     recovered.
//   - A worker whose core has ended (the hub's Goodbye reached it) does
//     not dial again: worker.Session returns after a Goodbye.
//
// A dial is taken to fail at once while the phone is cut off (a real one
// fails after its own timeout, which only shifts the retries).

// faultState is a co-training run's fault bookkeeping.
type faultState struct {
	hubRules    hub.DriverConfig    // the hub driver's: RegisterTimeout
	workerRules worker.DriverConfig // the worker session's: NextDial
	backoff     *rand.Rand          // the sessions' backoff jitter
	joined      map[string]int      // phone → the connection (phone.gen) whose Register the hub accepted
	pushes      map[string][]push   // accepted pushes, by phone: what a test asks of a phone's recovery
}

// push is a push the hub accepted: when, for which iteration, how many
// samples.
type push struct {
	at      int64
	iter    uint64
	samples int
}

// armed reports whether the scenario has any fault of the network.
func (n NetworkSpec) armed(faults []Fault) bool {
	if n.Loss > 0 || n.Retransmit > 0 || n.Spike > 0 {
		return true
	}
	for _, f := range faults {
		if f.Partition {
			return true
		}
	}
	return false
}

// startFaults arms the network's faults for a co-training run. Every draw
// comes from the scenario's seed: the network's from stream 3, the
// sessions' backoff jitter from stream 4. A run without faults is left
// exactly as before.
func (r *runner) startFaults() {
	if r.spec.Policy == "solo" || !r.sc.Network.armed(r.sc.Faults) {
		return
	}
	cuts := map[string][]window{}
	for _, f := range r.sc.Faults {
		if f.Partition {
			cuts[f.Device] = append(cuts[f.Device], window{f.At.Nanoseconds(), (f.At + f.For).Nanoseconds()})
		}
	}
	r.net.withFaults(r.sc.Network, rand.New(rand.NewPCG(r.sc.Seed, 3)), cuts)
	r.ft = &faultState{hubRules: hub.DefaultDriverConfig(), workerRules: worker.DefaultDriverConfig(),
		backoff: rand.New(rand.NewPCG(r.sc.Seed, 4)), joined: map[string]int{}, pushes: map[string][]push{}}
}

// partition starts fault f: the phone is cut off for f.For. The network
// holds or loses its messages (route); here the connection dies when the
// partition outlasts it.
func (r *runner) partition(f Fault) {
	p := r.byName[f.Device]
	if r.hubDone || p == nil || r.ft == nil {
		return
	}
	c := window{r.clk.now, r.clk.now + f.For.Nanoseconds()}
	if !r.net.breaks(c) {
		r.note(fmt.Sprintf("fault: %s cut off for %v (the connection outlasts it: messages wait)", f.Device, f.For))
		return
	}
	r.note(fmt.Sprintf("fault: %s cut off for %v (its connection dies after %v)", f.Device, f.For, r.sc.Network.ConnTimeout))
	gen := p.gen
	r.clk.at(c.from+r.sc.Network.ConnTimeout.Nanoseconds(), func() {
		if p.gen == gen && p.alive {
			r.connectionDied(p, fmt.Sprintf("no answer for %v (partition)", r.sc.Network.ConnTimeout))
		}
	})
}

// connectionDied ends p's connection on both sides, as the drivers see a
// dead transport: the hub's calls Core.Leave, the phone's session dials
// again unless its core has ended.
func (r *runner) connectionDied(p *phone, why string) {
	r.note(fmt.Sprintf("%s: connection lost: %s", p.spec.Name, why))
	p.alive = false
	p.gen++
	p.link = nil
	r.net.forget(p.spec.Name)
	r.hub.Leave(p.spec.Name)
	r.flushHub()
	if p.core.Ready().Done {
		return // the hub said Goodbye: the session is over
	}
	r.redial(p, 0, r.clk.now)
}

// redial schedules attempt (from 0) of p's session to dial the hub again,
// by worker.Session's rule (DriverConfig.NextDial) counted from since, the
// moment the connection died: after the backoff, or not at all when the
// session gives up first (ReconnectTimeout after since).
func (r *runner) redial(p *phone, attempt int, since int64) {
	wait, ok := r.ft.workerRules.NextDial(attempt, time.Duration(r.clk.now-since), r.ft.backoff)
	gen := p.gen
	if !ok {
		timeout := r.ft.workerRules.ReconnectTimeout
		r.clk.at(since+timeout.Nanoseconds(), func() {
			if !r.hubDone && p.gen == gen && !p.alive {
				r.note(fmt.Sprintf("%s: not reconnected within %v: the worker gives up", p.spec.Name, timeout))
			}
		})
		return
	}
	r.clk.at(r.clk.now+wait.Nanoseconds(), func() {
		if r.hubDone || p.gen != gen || p.alive {
			return
		}
		if _, cut := r.net.cut(p.spec.Name, r.clk.now); cut {
			r.redial(p, attempt+1, since) // the dial cannot reach the hub
			return
		}
		r.net.stats.Reconnects++
		r.note(fmt.Sprintf("%s: reconnects (dial %d)", p.spec.Name, attempt+1))
		r.connect(p)
	})
}

// connected starts the hub driver's registration timeout for p's new
// connection. Only a lost message can leave a connection unregistered, so
// it runs only with Loss.
func (r *runner) connected(p *phone) {
	if r.ft == nil || r.sc.Network.Loss == 0 {
		return
	}
	gen := p.gen
	timeout := r.ft.hubRules.RegisterTimeout
	r.clk.at(r.clk.now+timeout.Nanoseconds(), func() {
		if r.hubDone || p.gen != gen || !p.alive {
			return
		}
		if j, ok := r.ft.joined[p.spec.Name]; ok && j == gen {
			return
		}
		r.connectionDied(p, fmt.Sprintf("the hub closed it: no registration within %v", timeout))
	})
}

// accepted records a message from p that the hub's core accepted.
func (r *runner) accepted(p *phone, m wire.Message) {
	if r.ft == nil {
		return
	}
	switch m := m.(type) {
	case *wire.Register:
		r.ft.joined[p.spec.Name] = p.gen
	case *wire.Push:
		r.ft.pushes[p.spec.Name] = append(r.ft.pushes[p.spec.Name], push{r.clk.now, m.Iteration, m.Samples})
	}
}

// routed applies the network's faults to a message from (up) or to p that
// transfer scheduled from start to arrive: when it arrives, or false when
// it is lost (noted in the run's log).
func (r *runner) routed(p *phone, m wire.Message, up bool, start, arrive int64) (int64, bool) {
	at, lost := r.net.route(p.spec.Name, up, start, arrive)
	if lost {
		dir := "to " + p.spec.Name
		if up {
			dir = "from " + p.spec.Name
		}
		r.note(fmt.Sprintf("network: %s %d %s lost", m.Kind(), m.Head().Iteration, dir))
	}
	return at, !lost
}

// diverge nudges one of p's weights by one unit in the last place: what
// another processor's rounding of a step does to a phone (hub/doc.go,
// "Determinism"). Only the hash in the next Merged tells the phone; the
// scenario must keep it (Scenario.Hash).
func (r *runner) diverge(p *phone) {
	if !p.alive || p.core.Trainer() == nil {
		r.note(fmt.Sprintf("fault: %s has no weights to drift", p.spec.Name))
		return
	}
	net := p.core.Trainer().Net
	w := make([]float32, net.Params.Len())
	net.B.Download(w, net.Params)
	i := len(w) / 2
	w[i] = math.Nextafter32(w[i], float32(math.Inf(1)))
	net.B.Upload(net.Params, w)
	net.ParamsChanged()
	p.drifted = true
	r.note(fmt.Sprintf("fault: %s's weight %d drifts by one unit in the last place", p.spec.Name, i))
}

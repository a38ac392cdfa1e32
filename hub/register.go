package hub

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cotrain/cotrain/sync/wire"
)

// This file is the core's registration: who may join the run, and how.

// heldRegister is a Register whose handling waits for an ApplyRequest.
type heldRegister struct {
	from string
	m    *wire.Register
}

func (c *Core) register(from string, m *wire.Register) error {
	if old := c.peers[from]; old != nil {
		// A reconnect: whatever the old session held is lost on its side.
		c.remove(old, "registered again")
		c.check()
		if c.closing != nil {
			// The old session was the last the barrier waited for: the
			// new one joins the state after the step (Applied).
			c.held = &heldRegister{from, m}
			return nil
		}
		if c.phase == phaseDone {
			c.goodbye(from, "the run is over")
			return nil
		}
	}
	if len(c.order) >= c.cfg.MaxWorkers {
		c.send(from, &wire.Reject{Code: wire.CodeFull,
			Message: fmt.Sprintf("the run has its %d workers", c.cfg.MaxWorkers)})
		return fmt.Errorf("%w: %d workers", ErrFull, c.cfg.MaxWorkers)
	}
	if c.model.labels != nil && !slices.Equal(m.Classes, c.model.labels) {
		msg := c.classDiff(m.Classes)
		c.send(from, &wire.Reject{Code: wire.CodeClasses, Message: msg})
		return fmt.Errorf("%w: %q: %s", ErrClasses, from, msg)
	}
	speed := m.Speed
	if math.IsNaN(speed) || math.IsInf(speed, 0) || speed < 0 {
		speed = 0
	}
	p := &peer{id: from, speed: speed}
	p.computeW, p.radioW = declaredPower(m.Info)
	c.peers[from] = p
	i, _ := slices.BinarySearch(c.order, from)
	c.order = slices.Insert(c.order, i, from)
	c.event(Event{Kind: EventJoined, Peer: from, Iteration: c.iter, Text: m.Device})
	c.noteBattery(p, m.Battery)
	switch c.phase {
	case phaseWaiting:
		p.role = roleWaiting
		if len(c.order) >= c.cfg.MinWorkers {
			c.event(Event{Kind: EventStarted, Iteration: c.iter, Workers: len(c.order)})
			c.open(c.order, true)
		}
	case phaseParked:
		c.open(c.order, true)
	case phaseOpen:
		// Too late for this iteration's shares: it applies the Merged of
		// this iteration to the state it gets now, then takes part.
		p.role = roleIdle
		c.sendWelcome(p.id, c.model.master.Snapshot(true), 0)
		c.resendParts(p.id)
	}
	return nil
}

// classDiff says, for a person, how a worker's classes differ from the
// model's.
func (c *Core) classDiff(worker []string) string {
	model := strings.Join(c.model.labels, ", ")
	if len(worker) == 0 {
		return fmt.Sprintf("the model's classes are %s; this worker sent none (a worker from before class lists?)", model)
	}
	return "this worker's data has other classes than the model's (" + model + "): " + c.model.classDiff(worker)
}

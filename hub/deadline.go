package hub

import "math"

// The barrier's deadline, measured.
//
// A fixed deadline must cover the slowest phone's slowest iteration, so it
// is long (cmd/hub's default is 10 s), and a worker that falls silent — a
// phone whose screen goes off, an app the system suspends — holds every
// other phone for all of it, once per deadline it misses (MaxMisses of
// them before it is dropped). With Config.DeadlineFactor above 0 the core
// derives each iteration's deadline from what it measured instead:
//
//	deadline = clamp(⌈DeadlineFactor · max over members of tᵢ⌉, DeadlineFloorTicks, DeadlineTicks)
//
// where tᵢ is member i's recent iteration time in ticks: the ticks from
// the opening of an iteration to the arrival of the last part of its push
// (what it takes to receive the update, compute and send: everything the
// barrier waits for), the larger of the newest such measurement and their
// exponential average (Config.Smoothing), so one fast iteration does not
// shorten the deadline; scaled up by bᵢ/b when its batch bᵢ is larger than
// the batch b of that measurement; and doubled for every deadline it has
// missed in a row, so that a worker that is merely slower than before (a
// throttled phone) meets the next deadline, pushes, and is measured again,
// while a silent one is given up on within a few of its iteration times.
// Until every member has been measured once (a newcomer, a worker that
// registered again), the deadline is DeadlineTicks: it is the upper bound
// and the rule for what the hub does not know yet.
//
// Everything is counted in ticks: the core still reads no clock.

// iterTicks records that member p completed its push for the open
// iteration, whose batch for it is batch, after ticks ticks (the tick that
// is running counts: a push before the first tick took one).
func (c *Core) iterTicks(p *peer, batch int) {
	t := float64(c.bar.ticks + 1)
	p.iterTicks = smooth(p.iterTicks, t, c.cfg.Smoothing, p.timed)
	p.lastTicks, p.timedBatch, p.timed = t, batch, true
}

// deadlineFor returns the deadline, in ticks, of an iteration whose
// members have the given batches.
func (c *Core) deadlineFor(members map[string]int) int {
	limit := c.cfg.DeadlineTicks
	if limit == 0 || c.cfg.DeadlineFactor == 0 || len(members) == 0 {
		return limit
	}
	slowest := 0.0
	for id, batch := range members {
		p := c.peers[id]
		if p == nil || !p.timed {
			return limit
		}
		t := max(p.iterTicks, p.lastTicks)
		if batch > p.timedBatch {
			t *= float64(batch) / float64(p.timedBatch)
		}
		slowest = max(slowest, math.Ldexp(t, min(p.misses, 30)))
	}
	d := math.Ceil(c.cfg.DeadlineFactor * slowest)
	if d >= float64(limit) {
		return limit
	}
	// The floor cannot lift the deadline above its upper bound (a --deadline
	// shorter than the default --deadline-floor is still the most).
	return min(max(int(d), c.cfg.DeadlineFloorTicks, 1), limit)
}

package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// This file is the simulator's energy model: each profile's power
// (Power), and what each phone spends of it during a run (meter). The
// figures and their sources are in docs/energy.md; every figure that is
// not a measurement of the profiled phone is marked there as an estimate.
//
// A phone's energy from the start of training to its end is
//
//	Idle·wall + Compute·t_compute                       (the SoC)
//	+ Tx·bytes_sent + Rx·bytes_received                 (the radio, per byte)
//	+ Active·t_wait_for_air + TailW·t_tail              (the radio awake, idle)
//
// reported in three parts: compute (Idle + Compute while computing), radio
// (every radio term) and waiting (Idle while not computing: at the
// barrier, sending, receiving). t_tail is the time the radio stays up after
// each transfer, Tail at most, cut short by the next transfer. A phone on
// a charger (device charging) draws the same energy, but from the wall:
// its battery percentage is 0.

// Power is a device's power model. Watts are what the phone draws above
// its draw with the screen off and nothing running, except Idle, which is
// that draw itself (awake, Wi-Fi associated).
type Power struct {
	// CPU and GPU are the draw while training on the CPU or the GPU; Unit
	// says which the profile's step time was measured on ("cpu", "gpu").
	CPU, GPU float64
	Unit     string
	// Idle is the draw of the phone awake with the screen off, Wi-Fi
	// associated: the floor while it takes part.
	Idle float64
	// Tx and Rx are the radio's joules per byte sent and received.
	Tx, Rx float64
	// Active is the radio's draw while it waits for the medium.
	Active float64
	// Tail is how long the radio stays in its high-power state after a
	// transfer, drawing TailW.
	Tail  time.Duration
	TailW float64
	// Battery is the battery's capacity in watt-hours.
	Battery float64
	// Source says where the figures come from (docs/energy.md has the
	// details).
	Source string
}

// compute returns the draw of the unit the profile trains on.
func (p Power) compute() float64 {
	if p.Unit == "gpu" {
		return p.GPU
	}
	return p.CPU
}

// validate reports a power model that cannot be.
func (p Power) validate() error {
	for _, v := range []float64{p.CPU, p.GPU, p.Idle, p.Tx, p.Rx, p.Active, p.TailW} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("power figures must be finite and not negative: %+v", p)
		}
	}
	switch {
	case p.Unit != "cpu" && p.Unit != "gpu":
		return fmt.Errorf("power unit %q, want cpu or gpu", p.Unit)
	case p.Tail < 0:
		return fmt.Errorf("radio tail %v", p.Tail)
	case !(p.Battery > 0):
		return fmt.Errorf("battery %v Wh, want a capacity", p.Battery)
	}
	return nil
}

// nominalVolts converts the vendors' milliamps to watts: a Li-ion cell's
// nominal 3.8 V (an estimate: the profiles give currents only).
const nominalVolts = 3.8

// mA returns the watts of a current in milliamps at nominalVolts.
func mA(x float64) float64 { return x / 1e3 * nominalVolts }

// mAh returns the watt-hours of a capacity in milliamp-hours.
func mAh(x float64) float64 { return x / 1e3 * nominalVolts }

// Wi-Fi figures shared by the built-in profiles (docs/energy.md): the
// radio's energy per byte is its active draw over the bytes it moves at
// the paper's 32 Mbit/s, and it stays up for a tail after each transfer.
const (
	wifiTail     = 200 * time.Millisecond // estimate: 802.11 power-save timeout
	wifiWaitDraw = 0.133                  // W, Huang et al. MobiSys'12, Wi-Fi β (quoted)
)

// perByteAt32 returns the joules per byte of a radio drawing w watts while
// it moves 32 Mbit/s.
func perByteAt32(w float64) float64 { return w / (32e6 / 8) }

// builtinPowers are the built-in profiles' power models (docs/energy.md).
var builtinPowers = map[string]Power{
	// Nexus 6P (Snapdragon 810): the vendor's power_profile.xml (AOSP
	// device/huawei/angler): cpu.active 380 mA per core at every speed,
	// cpu.awake 9.5 mA, wifi.on 21.2 mA, wifi.active 98.0 mA, battery
	// 3450 mAh. Four busy cores (an estimate of Caffe's threads).
	"nexus-6p": {CPU: 4 * mA(379.97), GPU: 2.5, Unit: "cpu", Idle: mA(9.49 + 21.22),
		Tx: perByteAt32(mA(98.05)), Rx: perByteAt32(mA(98.05)), Active: wifiWaitDraw,
		Tail: wifiTail, TailW: wifiWaitDraw, Battery: mAh(3450),
		Source: "angler power_profile.xml; 4 busy cores, GPU 2.5 W: estimates"},
	// Meizu MX3 (Exynos 5410): no power profile of its own; the Galaxy
	// S4 GT-I9500 has the same SoC: its power_profile.xml (CyanogenMod
	// device/samsung/i9500) gives cpu.active 1860 mA at 1.6 GHz (taken as
	// the A15 cluster at full load), cpu.awake 62.3 mA, wifi.active
	// 337.3 mA. Battery 2400 mAh (Meizu's specification).
	"meizu-mx3": {CPU: mA(1860), GPU: 2.0, Unit: "cpu", Idle: mA(62.3 + 0.1),
		Tx: perByteAt32(mA(337.3)), Rx: perByteAt32(mA(337.3)), Active: wifiWaitDraw,
		Tail: wifiTail, TailW: wifiWaitDraw, Battery: mAh(2400),
		Source: "Galaxy S4 i9500 power_profile.xml (same Exynos 5410); GPU 2 W: estimate"},
	// Nexus 7 (2013, Snapdragon S4 Pro): the hub; its figures are
	// estimates (like the MX3's CPU, it sets only the hub's merge time).
	"nexus-7": {CPU: 4.0, GPU: 2.0, Unit: "cpu", Idle: 0.15,
		Tx: perByteAt32(0.5), Rx: perByteAt32(0.5), Active: wifiWaitDraw,
		Tail: wifiTail, TailW: wifiWaitDraw, Battery: mAh(3950),
		Source: "estimates"},
}

// genericPower is the model of a profile a scenario defines without a
// power line: a 2015 phone, every figure an estimate.
var genericPower = Power{CPU: 4.0, GPU: 2.0, Unit: "cpu", Idle: 0.15,
	Tx: perByteAt32(0.5), Rx: perByteAt32(0.5), Active: wifiWaitDraw,
	Tail: wifiTail, TailW: wifiWaitDraw, Battery: mAh(3000), Source: "generic estimates"}

// powerOf returns the power model of profile name: the scenario's power
// line, else the built-in one, else genericPower.
func (sc *Scenario) powerOf(name string) Power {
	if p, ok := sc.Powers[name]; ok {
		return p
	}
	if p, ok := builtinPowers[name]; ok {
		return p
	}
	return genericPower
}

// setPower applies a "power PROFILE k=v..." line.
func (sc *Scenario) setPower(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("power: no profile")
	}
	name := args[0]
	p := sc.powerOf(name)
	if _, ok := sc.Powers[name]; !ok {
		p.Source = "scenario"
	}
	watts := func(dst *float64) func(string) error {
		return func(s string) error {
			v, err := strconv.ParseFloat(s, 64)
			*dst = v
			return err
		}
	}
	nanojoules := func(dst *float64) func(string) error {
		return func(s string) error {
			v, err := strconv.ParseFloat(s, 64)
			*dst = v * 1e-9
			return err
		}
	}
	f := fieldSetter{m: kv(args[1:])}
	f.take("cpu", watts(&p.CPU))
	f.take("gpu", watts(&p.GPU))
	f.take("unit", func(s string) error { p.Unit = s; return nil })
	f.take("idle", watts(&p.Idle))
	f.take("tx-nj", nanojoules(&p.Tx))
	f.take("rx-nj", nanojoules(&p.Rx))
	f.take("active", watts(&p.Active))
	f.take("tail", durTo(&p.Tail))
	f.take("tail-w", watts(&p.TailW))
	f.take("battery-wh", watts(&p.Battery))
	f.take("source", func(s string) error { p.Source = s; return nil })
	if err := f.done(); err != nil {
		return err
	}
	if sc.Powers == nil {
		sc.Powers = map[string]Power{}
	}
	sc.Powers[name] = p
	return nil
}

// Energy is where one phone's energy went during a run, in joules.
type Energy struct {
	// Compute is the draw while computing (idle floor included); Radio
	// every radio term (per byte, waiting for the medium, tail); Wait the
	// idle floor while not computing.
	Compute, Radio, Wait float64
	// Charging phones draw from the wall: no battery used.
	Charging bool
	// BatteryWh is the capacity the percentage is of.
	BatteryWh float64
}

// Total is the phone's energy in joules.
func (e Energy) Total() float64 { return e.Compute + e.Radio + e.Wait }

// BatteryPercent is the share of the battery the run used (0 on a
// charger).
func (e Energy) BatteryPercent() float64 {
	if e.Charging || e.BatteryWh <= 0 {
		return 0
	}
	return 100 * e.Total() / (e.BatteryWh * 3600)
}

// meter accounts one phone's energy as its computes and transfers are
// scheduled. Only what happens after the start of training counts, as for
// the times.
type meter struct {
	pw       Power
	compute  float64 // seconds computing
	extra    float64 // J: compute draw above idle
	radio    float64 // J: every radio term but the last tail
	radioEnd int64   // ns: when the last transfer ended (-1: none yet)
}

func newMeter(pw Power) *meter { return &meter{pw: pw, radioEnd: -1} }

// computed accounts a compute of sec seconds.
func (m *meter) computed(sec float64) {
	m.compute += sec
	m.extra += float64(m.pw.compute() * sec)
}

// transfer accounts size bytes (sent when up) on the air from start to
// end (ns), after waiting wait seconds for the medium.
func (m *meter) transfer(up bool, size int, wait float64, start, end int64) {
	perByte := m.pw.Rx
	if up {
		perByte = m.pw.Tx
	}
	m.radio += float64(perByte*float64(size)) + float64(m.pw.Active*wait)
	if m.radioEnd >= 0 && start > m.radioEnd {
		m.radio += float64(m.pw.TailW * math.Min(m.pw.Tail.Seconds(), float64(start-m.radioEnd)/1e9))
	}
	m.radioEnd = max(m.radioEnd, end)
}

// total returns the energy so far for a phone that has taken part for
// wall seconds up to now (ns), its radio tail counted up to now.
func (m *meter) total(wall float64, now int64) Energy {
	radio := m.radio
	if m.radioEnd >= 0 && now > m.radioEnd {
		radio += float64(m.pw.TailW * math.Min(m.pw.Tail.Seconds(), float64(now-m.radioEnd)/1e9))
	}
	return Energy{Compute: float64((m.pw.Idle)*m.compute) + m.extra, Radio: radio,
		Wait: m.pw.Idle * math.Max(0, wall-m.compute), BatteryWh: m.pw.Battery}
}

// radio accounts a transfer to or from p, handed to the network at handed
// and on the air from start to end (ns). Only what happens after the start
// of training counts (the model's distribution before it does not, as for
// the times), and a solo run's network is the phone itself.
func (r *runner) radio(p *phone, up bool, size int, handed, start, end int64) {
	if r.t0 < 0 || r.net.kind == "loopback" {
		return
	}
	p.meter.transfer(up, size, r.span(handed, start), start, end)
}

// phoneEnergy returns p's energy from the start of training to now (or to
// when it left).
func (r *runner) phoneEnergy(p *phone, now int64) Energy {
	t0 := max(r.t0, 0)
	if p.stats.ended {
		now = min(now, p.stats.endAt)
	}
	e := p.meter.total(math.Max(0, float64(now-t0)/1e9), now)
	e.Charging = p.spec.Charging
	return e
}

// energyNow returns the run's energy so far, in joules, every phone's.
func (r *runner) energyNow() float64 {
	var sum float64
	for _, p := range r.phones {
		sum += r.phoneEnergy(p, r.clk.now).Total()
	}
	return sum
}

// JoulesPerSample is the run's energy over the samples it merged.
func (r *RunResult) JoulesPerSample() float64 {
	if r.Samples == 0 {
		return 0
	}
	return r.Energy / float64(r.Samples)
}

// BatteryJoules is what the run took from the phones' batteries: the
// energy of every phone not on a charger (what the energy policy saves).
func (r *RunResult) BatteryJoules() float64 {
	var sum float64
	for _, d := range r.Devices {
		if !d.Energy.Charging {
			sum += d.Energy.Total()
		}
	}
	return sum
}

// MaxBatteryPercent is the largest share of a battery any phone of the
// run used.
func (r *RunResult) MaxBatteryPercent() float64 {
	var m float64
	for _, d := range r.Devices {
		m = math.Max(m, d.Energy.BatteryPercent())
	}
	return m
}

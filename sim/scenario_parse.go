package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cotrain/cotrain/hub"
)

// This file reads scenario files: ParseScenario and the key parsers.

// ParseScenario reads a scenario: one "key value..." per line, "#" starts
// a comment. Fields of the form k=v follow some keys (network, optimizer,
// eval, data, device, profile, fault). Unknown keys and fields are errors,
// with the line number.
func ParseScenario(r io.Reader) (*Scenario, error) {
	sc := defaults()
	sc.Policies = nil
	sc.Compression, sc.Overlap = "", hub.DefaultConfig().Overlap
	s := bufio.NewScanner(r)
	for ln := 1; s.Scan(); ln++ {
		line, _, _ := strings.Cut(s.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if err := sc.set(f[0], f[1:]); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrScenario, ln, err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	if sc.Policies == nil {
		sc.Policies = defaults().Policies
	}
	if sc.Compression == "" {
		sc.Compression = hub.DefaultCompression(sc.Optimizer)
	}
	if sc.Primary == "" {
		sc.Primary = sc.Policies[len(sc.Policies)-1]
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// kv splits k=v fields; a field without "=" is a flag (value "").
func kv(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// fieldSetter parses the k=v fields of one line into their destinations;
// it reports the first bad value or unknown field.
type fieldSetter struct {
	m   map[string]string
	err error
}

func (f *fieldSetter) take(k string, parse func(string) error) {
	v, ok := f.m[k]
	if !ok || f.err != nil {
		return
	}
	delete(f.m, k)
	if err := parse(v); err != nil {
		f.err = fmt.Errorf("%s=%q: %w", k, v, err)
	}
}

func (f *fieldSetter) done() error {
	if f.err != nil {
		return f.err
	}
	if len(f.m) > 0 {
		var keys []string
		for k := range f.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return fmt.Errorf("unknown field %q", keys[0])
	}
	return nil
}

func intTo(dst *int) func(string) error {
	return func(s string) (err error) { *dst, err = strconv.Atoi(s); return }
}

func floatTo(dst *float64) func(string) error {
	return func(s string) (err error) { *dst, err = strconv.ParseFloat(s, 64); return }
}

func durTo(dst *time.Duration) func(string) error {
	return func(s string) (err error) { *dst, err = time.ParseDuration(s); return }
}

// probTo parses a probability in [0, 1).
func probTo(dst *float64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		if !(v >= 0 && v < 1) {
			return errors.New("want a probability in [0, 1)")
		}
		*dst = v
		return nil
	}
}

// chanceTo parses the two halves of "PROBABILITY:DURATION".
func chanceTo(p *float64, d *time.Duration, ps, ds string) error {
	if err := probTo(p)(ps); err != nil {
		return err
	}
	v, err := time.ParseDuration(ds)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("want a positive duration after the colon, got %v", v)
	}
	*d = v
	return nil
}

// parseBandwidth reads "32Mbit", "300Mbit", "1Gbit" or bits per second.
func parseBandwidth(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "Gbit"):
		mult, s = 1e9, strings.TrimSuffix(s, "Gbit")
	case strings.HasSuffix(s, "Mbit"):
		mult, s = 1e6, strings.TrimSuffix(s, "Mbit")
	case strings.HasSuffix(s, "kbit"):
		mult, s = 1e3, strings.TrimSuffix(s, "kbit")
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err
}

func one(args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("want one value, got %d", len(args))
	}
	return args[0], nil
}

// set applies one line.
func (sc *Scenario) set(key string, args []string) error {
	switch key {
	case "name", "model", "hub", "primary":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		*map[string]*string{"name": &sc.Name, "model": &sc.Model, "hub": &sc.Hub, "primary": &sc.Primary}[key] = v
		return nil
	case "description":
		sc.Description = strings.Join(args, " ")
		return nil
	case "seed":
		v, err := one(args)
		if err == nil {
			sc.Seed, err = strconv.ParseUint(v, 10, 64)
		}
		return err
	case "batch", "iterations", "patience":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		dst := map[string]*int{"batch": &sc.GlobalBatch, "iterations": &sc.Iterations, "patience": &sc.Patience}[key]
		return intTo(dst)(v)
	case "target":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return floatTo(&sc.Target)(v)
	case "policies":
		sc.Policies = slices.Clone(args)
		return nil
	case "compress":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		sc.Compression = v
		return nil
	case "overlap", "hash":
		v, err := one(args)
		if err != nil || (v != "on" && v != "off") {
			return fmt.Errorf("%s: want on or off, got %q", key, strings.Join(args, " "))
		}
		*map[string]*bool{"overlap": &sc.Overlap, "hash": &sc.Hash}[key] = v == "on"
		return nil
	case "deadline-rules":
		for i, a := range args {
			if a != "fixed" && a != "measured" || slices.Contains(args[:i], a) {
				return fmt.Errorf("%s: want fixed and/or measured, once each, got %q", key, strings.Join(args, " "))
			}
		}
		if len(args) == 0 {
			return fmt.Errorf("%s: no value (want fixed and/or measured)", key)
		}
		sc.DeadlineRules = slices.Clone(args)
		return nil
	case "deadline":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return durTo(&sc.Deadline)(v)
	}
	if len(args) == 0 && key != "device" {
		return fmt.Errorf("%s: no value", key)
	}
	switch key {
	case "data":
		sc.Data = args[0]
		f := fieldSetter{m: kv(args[1:])}
		f.take("train", intTo(&sc.TrainImages))
		f.take("test", intTo(&sc.TestImages))
		f.take("context", intTo(&sc.Context))
		return f.done()
	case "eval":
		f := fieldSetter{m: kv(args)}
		f.take("every", intTo(&sc.EvalEvery))
		f.take("test", intTo(&sc.TestImages))
		return f.done()
	case "optimizer":
		sc.Optimizer = args[0]
		f := fieldSetter{m: kv(args[1:])}
		f.take("lr", floatTo(&sc.LR))
		f.take("momentum", floatTo(&sc.Momentum))
		f.take("weight-decay", floatTo(&sc.WeightDecay))
		f.take("nesterov", func(v string) error {
			if v != "on" && v != "off" {
				return fmt.Errorf("nesterov=%s, want on or off", v)
			}
			sc.Nesterov = v == "on"
			return nil
		})
		return f.done()
	case "hub-policy":
		f := fieldSetter{m: kv(args)}
		f.take("smoothing", floatTo(&sc.Smoothing))
		f.take("park-margin", floatTo(&sc.ParkMargin))
		f.take("energy-slack", floatTo(&sc.EnergySlack))
		return f.done()
	case "network":
		f := fieldSetter{m: kv(args)}
		f.take("bandwidth", func(s string) (err error) { sc.Network.Bandwidth, err = parseBandwidth(s); return })
		f.take("latency", durTo(&sc.Network.Latency))
		f.take("medium", func(s string) error { sc.Network.Medium = s; return nil })
		f.take("loss", probTo(&sc.Network.Loss))
		f.take("retransmit", func(s string) error {
			p, rto, ok := strings.Cut(s, ":")
			if !ok {
				return probTo(&sc.Network.Retransmit)(p)
			}
			return chanceTo(&sc.Network.Retransmit, &sc.Network.RTO, p, rto)
		})
		f.take("spike", func(s string) error {
			p, d, ok := strings.Cut(s, ":")
			if !ok {
				return errors.New("want PROBABILITY:DELAY, e.g. 0.02:300ms")
			}
			return chanceTo(&sc.Network.Spike, &sc.Network.SpikeDelay, p, d)
		})
		f.take("conn-timeout", func(s string) error {
			if err := durTo(&sc.Network.ConnTimeout)(s); err != nil {
				return err
			}
			if sc.Network.ConnTimeout <= 0 {
				return errors.New("want a positive duration")
			}
			return nil
		})
		return f.done()
	case "power":
		return sc.setPower(args)
	case "profile":
		p := Profile{Name: args[0], Source: "scenario"}
		f := fieldSetter{m: kv(args[1:])}
		f.take("step", durTo(&p.RefStep))
		f.take("source", func(s string) error { p.Source = s; return nil })
		sc.Profiles = append(sc.Profiles, p)
		return f.done()
	case "device":
		if len(args) == 0 {
			return errors.New("device: no profile")
		}
		d := DeviceSpec{Profile: args[0], Throttle: 1}
		count := 1
		f := fieldSetter{m: kv(args[1:])}
		f.take("name", func(s string) error { d.Name = s; return nil })
		f.take("count", intTo(&count))
		f.take("jitter", floatTo(&d.Jitter))
		f.take("throttle-after", durTo(&d.ThrottleAfter))
		f.take("throttle", floatTo(&d.Throttle))
		f.take("absent", func(string) error { d.Absent = true; return nil })
		f.take("charging", func(string) error { d.Charging = true; return nil })
		if err := f.done(); err != nil {
			return err
		}
		if count < 1 || (count > 1 && d.Name != "") {
			return fmt.Errorf("device: count %d with name %q (a name is for one device)", count, d.Name)
		}
		for range count {
			e := d
			if e.Name == "" {
				e.Name = fmt.Sprintf("%s-%d", d.Profile, sc.countProfile(d.Profile)+1)
			}
			sc.Devices = append(sc.Devices, e)
		}
		return nil
	case "fault":
		var ft Fault
		f := fieldSetter{m: kv(args)}
		kinds := 0
		kind := func(set func(string)) func(string) error {
			return func(s string) error {
				if kinds++; kinds > 1 {
					return errors.New("a fault is one of leave, join or partition (or diverge), one per line")
				}
				set(s)
				return nil
			}
		}
		f.take("at", durTo(&ft.At))
		f.take("leave", kind(func(s string) { ft.Leave, ft.Device = true, s }))
		f.take("join", kind(func(s string) { ft.Device = s }))
		f.take("partition", kind(func(s string) { ft.Partition, ft.Device = true, s }))
		f.take("diverge", kind(func(s string) { ft.Diverge, ft.Device = true, s }))
		f.take("for", durTo(&ft.For))
		if err := f.done(); err != nil {
			return err
		}
		if ft.Partition != (ft.For > 0) {
			return fmt.Errorf("a partition needs for=DURATION (positive), and only a partition has one (for=%v)", ft.For)
		}
		sc.Faults = append(sc.Faults, ft)
		return nil
	}
	return fmt.Errorf("unknown key %q", key)
}

// countProfile counts the devices of profile p so far.
func (sc *Scenario) countProfile(p string) int {
	n := 0
	for _, d := range sc.Devices {
		if d.Profile == p {
			n++
		}
	}
	return n
}

package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/sync/wire"
)

// This file reads the phone's battery where the system exposes it: the
// power_supply class of Linux and Android sysfs.

// ErrNoBattery is wrapped by PowerSupply.Read when the folder holds no
// battery (a desktop, a container, a phone that hides it).
var ErrNoBattery = errors.New("worker: no battery in the power_supply folder")

// DefaultPowerSupply is where Linux and Android expose their power
// supplies.
const DefaultPowerSupply = "/sys/class/power_supply"

// PowerSupply reads the battery of a power_supply folder: Dir is either
// the class folder (/sys/class/power_supply), whose first entry of type
// "Battery" in name order is read, or one supply's own folder (…/BAT0,
// …/battery). Of that supply it reads "capacity" (the level in percent)
// and "status" (Charging, Discharging, Full, Not charging, Unknown). When
// the status is missing or Unknown, a supply of another type (Mains, USB,
// Wireless) whose "online" is 1 makes it charging, as Android's charger
// entries say. Nothing else is read: a fake folder in a test behaves as a
// phone's.
type PowerSupply struct {
	Dir string
}

// Read returns the battery now. It wraps ErrNoBattery when Dir has none,
// and the file system's error when a file cannot be read.
func (p PowerSupply) Read() (wire.Battery, error) {
	bat, others, err := p.find()
	if err != nil {
		return wire.Battery{}, err
	}
	capText, err := readTrim(filepath.Join(bat, "capacity"))
	if err != nil {
		return wire.Battery{}, fmt.Errorf("worker: battery level: %w", err)
	}
	pct, err := strconv.ParseFloat(capText, 32)
	if err != nil || pct < 0 || pct > 100 {
		return wire.Battery{}, fmt.Errorf("worker: battery level %q in %s, want a percentage", capText, bat)
	}
	status := wire.BatteryUnknown
	if s, err := readTrim(filepath.Join(bat, "status")); err == nil {
		status = parseStatus(s)
	}
	if status == wire.BatteryUnknown {
		for _, o := range others {
			if s, err := readTrim(filepath.Join(o, "online")); err == nil && s == "1" {
				status = wire.BatteryCharging
				break
			}
		}
	}
	if status == wire.BatteryUnknown {
		// A level without a status: the hub can show it but will not act
		// on it (wire.Battery.Known).
		return wire.Battery{Percent: float32(pct)}, nil
	}
	return wire.Battery{Percent: float32(pct), Status: status}, nil
}

// find returns the battery's folder and the other supplies' folders.
func (p PowerSupply) find() (bat string, others []string, err error) {
	if _, err := os.Stat(filepath.Join(p.Dir, "capacity")); err == nil {
		return p.Dir, nil, nil
	}
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("%w: %s: %w", ErrNoBattery, p.Dir, err)
		}
		return "", nil, fmt.Errorf("worker: power supplies: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	for _, n := range names {
		dir := filepath.Join(p.Dir, n)
		typ, err := readTrim(filepath.Join(dir, "type"))
		switch {
		case err != nil:
		case typ == "Battery" && bat == "":
			bat = dir
		case typ != "Battery":
			others = append(others, dir)
		}
	}
	if bat == "" {
		return "", nil, fmt.Errorf("%w: %s", ErrNoBattery, p.Dir)
	}
	return bat, others, nil
}

// parseStatus reads power_supply's "status" words.
func parseStatus(s string) wire.BatteryStatus {
	switch s {
	case "Discharging":
		return wire.BatteryDischarging
	case "Charging":
		return wire.BatteryCharging
	case "Full":
		return wire.BatteryFull
	case "Not charging":
		return wire.BatteryNotCharging
	}
	return wire.BatteryUnknown
}

// readTrim reads a small sysfs file without its trailing newline.
func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

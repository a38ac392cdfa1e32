package main

import (
	"io"
	"strings"
	"testing"
)

func TestFlagsHTTP(t *testing.T) {
	for _, bad := range []string{"8081", "phone", "127.0.0.1:"} {
		if _, err := parseFlags([]string{"--http", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "--http") {
			t.Errorf("--http %q: %v, want an error naming the flag", bad, err)
		}
	}
	if c, err := parseFlags([]string{"--http", "127.0.0.1:0"}, io.Discard); err != nil || c.http != "127.0.0.1:0" {
		t.Errorf("--http 127.0.0.1:0: %v", err)
	}
}

// TestFlagsBattery: the battery's folder and period, and the declared
// power, with their refusals.
func TestFlagsBattery(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.powerSupply != "/sys/class/power_supply" || c.batteryEvery <= 0 || c.computeWatts != 0 {
		t.Fatalf("defaults %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--power-supply", "/tmp/fake", "--battery-every", "1s", "--compute-watts", "5.8", "--radio-watts", "0.4"}, io.Discard)
	if err != nil || c.powerSupply != "/tmp/fake" || c.computeWatts != 5.8 || c.radioWatts != 0.4 {
		t.Fatalf("parsed %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"--battery-every", "0s"}, {"--compute-watts", "-1"}, {"--radio-watts", "-0.1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%q: %v, want an error naming the flag", bad, err)
		}
	}
}

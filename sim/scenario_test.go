package sim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBuiltinScenariosParse: every built-in scenario loads and validates.
func TestBuiltinScenariosParse(t *testing.T) {
	names := BuiltinScenarios()
	for _, want := range []string{"paper-table1", "paper-300mbit", "fleet16", "leave-midway", "fleet64"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("built-in %s missing from %v", want, names)
		}
	}
	for _, n := range names {
		sc, err := LoadScenario(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Name != n {
			t.Errorf("%s: name %q", n, sc.Name)
		}
	}
	sc, _ := LoadScenario("fleet64")
	if len(sc.Devices) != 64 || sc.Devices[63].Name != "meizu-mx3-32" {
		t.Errorf("fleet64: %d devices, last %q", len(sc.Devices), sc.Devices[len(sc.Devices)-1].Name)
	}
}

// TestParseScenario checks values and every refusal, with its line.
func TestParseScenario(t *testing.T) {
	base := "name t\ndevice nexus-6p\n"
	sc, err := ParseScenario(strings.NewReader(`# a comment
name t
seed 9
batch 32
network bandwidth=300Mbit latency=5ms medium=links
optimizer adam lr=0.002
eval every=5 test=200
patience 4
policies solo adaptive-park
profile slow step=4s source=guess
device slow count=2 jitter=0.1 throttle-after=30s throttle=0.5
device nexus-6p name=fast absent
fault at=10s join=fast
fault at=20s leave=slow-1
`))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case sc.Seed != 9 || sc.GlobalBatch != 32 || sc.Network.Bandwidth != 300e6 || sc.Network.Latency != 5*time.Millisecond,
		sc.Network.Medium != "links" || sc.Optimizer != "adam" || sc.LR != 0.002 || sc.EvalEvery != 5 || sc.TestImages != 200,
		sc.Primary != "adaptive-park" || sc.Patience != 4 || len(sc.Devices) != 3 || sc.Devices[1].Name != "slow-2" || !sc.Devices[2].Absent,
		sc.Devices[0].ThrottleAfter != 30*time.Second || sc.Devices[0].Throttle != 0.5 || len(sc.Faults) != 2 || !sc.Faults[1].Leave:
		t.Fatalf("parsed %+v", sc)
	}
	cases := []struct{ name, text, want string }{
		{"unknown key", base + "colour blue\n", "line 3: unknown key"},
		{"unknown field", base + "network speed=3\n", `unknown field "speed"`},
		{"bad number", base + "batch many\n", "line 3"},
		{"bad duration", base + "network latency=soon\n", "latency"},
		{"no name", "device nexus-6p\n", "no name"},
		{"no device", "name t\n", "no device"},
		{"unknown profile", "name t\ndevice pixel-99\n", "no device profile"},
		{"twice the same name", base + "device nexus-6p name=nexus-6p-1\n", "two devices"},
		{"fault for nobody", base + "fault at=1s leave=ghost\n", "ghost"},
		{"bad policy", base + "policies greedy\n", "policy"},
		{"primary solo", base + "primary solo\npolicies solo fixed\n", "primary"},
		{"batch too small", base + "device nexus-6p count=3\nbatch 2\n", "each needs a sample"},
		{"throttle above 1", "name t\ndevice nexus-6p throttle=2\n", "throttle"},
		{"all absent", "name t\ndevice nexus-6p absent\n", "absent"},
		{"medium", base + "network medium=carrier-pigeon\n", "medium"},
		{"negative patience", base + "patience -1\n", "patience -1"},
	}
	for _, tc := range cases {
		_, err := ParseScenario(strings.NewReader(tc.text))
		if err == nil || !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrScenario mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadScenario("no-such-scenario"); err == nil || !strings.Contains(err.Error(), "paper-table1") {
		t.Errorf("unknown scenario: %v (should list the built-ins)", err)
	}
}

// deadline-rules doubles the co-training runs, one per rule, and refuses
// anything but fixed and measured, each once.
func TestParseDeadlineRules(t *testing.T) {
	sc, err := LoadScenario("phone-sleeps")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range plan(sc, []string{"solo", "adaptive"}) {
		names = append(names, s.Name+"/"+s.Deadline)
	}
	if got := strings.Join(names, ","); got != "solo nexus-6p-1/,solo meizu-mx3/,adaptive fixed-deadline/fixed,adaptive measured-deadline/measured" {
		t.Errorf("runs %s", got)
	}
	for _, bad := range []string{"deadline-rules fixed fixed", "deadline-rules sliding", "deadline-rules"} {
		_, err := ParseScenario(strings.NewReader("name t\ndevice nexus-6p\n" + bad + "\n"))
		if err == nil || !errors.Is(err, ErrScenario) {
			t.Errorf("%q: %v, want a refusal", bad, err)
		}
	}
}

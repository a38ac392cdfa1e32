package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// faultBase is the scenario of the fault tests: three phones of the
// paper's profiles co-train lenet5 on the synthetic set over 32 Mbit/s
// Wi-Fi, an iteration taking about half a second of virtual time, with a
// 2 s deadline (the hub's recovery from a lost push) and the hub dropping a
// worker after 3 missed deadlines in a row.
const faultBase = `name        faults
seed        1
model       lenet5
data        synthetic test=500
batch       48
optimizer   adam lr=0.002
eval        every=20
policies    adaptive
deadline    2s
network     bandwidth=32Mbit latency=2ms medium=shared
hub         nexus-7
device      nexus-6p count=2
device      meizu-mx3 name=meizu-mx3
`

// faultRun parses faultBase plus extra lines, runs its adaptive policy to
// the end and returns the result and the runner (for what it recorded of
// the faults). The run must finish with the invariants checked at every
// iteration.
func faultRun(t *testing.T, extra string) (*RunResult, *runner) {
	t.Helper()
	sc, err := ParseScenario(strings.NewReader(faultBase + extra))
	if err != nil {
		t.Fatal(err)
	}
	res, r, err := runOne(sc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != sc.Iterations || res.Checks != res.Iterations {
		t.Fatalf("%d of %d iterations, invariants checked at %d", res.Iterations, sc.Iterations, res.Checks)
	}
	t.Logf("%d iterations in %.1f s simulated, accuracy %.3f, faults %+v", res.Iterations, res.End, res.FinalAccuracy(), res.Faults)
	return res, r
}

// runOne runs sc's adaptive policy alone, without validating sc first.
func runOne(sc *Scenario) (*RunResult, *runner, error) {
	d, err := LoadData(sc, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	r, err := newRunner(context.Background(), sc, runSpec{Name: "adaptive", Policy: "adaptive"}, d, Options{})
	if err != nil {
		return nil, nil, err
	}
	res, err := r.run()
	return res, r, err
}

// pushesIn counts the samples of the pushes the hub accepted from phone
// in [from, to) (virtual time, ns).
func (r *runner) pushesIn(phone string, from, to int64) (n, samples int) {
	for _, p := range r.ft.pushes[phone] {
		if p.at >= from && p.at < to {
			n++
			samples += p.samples
		}
	}
	return n, samples
}

// lastPush returns the iteration of phone's last accepted push (-1 if none).
func (r *runner) lastPush(phone string) int {
	ps := r.ft.pushes[phone]
	if len(ps) == 0 {
		return -1
	}
	return int(ps[len(ps)-1].iter)
}

// logHas reports which of want the run's log lacks.
func logLacks(res *RunResult, want ...string) []string {
	log := strings.Join(res.Log, "\n")
	var out []string
	for _, w := range want {
		if !strings.Contains(log, w) {
			out = append(out, w)
		}
	}
	return out
}

// everyPhoneToTheEnd fails unless every phone had a push accepted in the
// run's last few iterations: none was lost for good.
func everyPhoneToTheEnd(t *testing.T, res *RunResult, r *runner) {
	t.Helper()
	for _, p := range r.phones {
		if last := r.lastPush(p.spec.Name); last < res.Iterations-4 {
			t.Errorf("%s: last push accepted for iteration %d of %d: it stopped training; log:\n%s",
				p.spec.Name, last, res.Iterations, strings.Join(res.Log, "\n"))
		}
	}
}

// toTheEndOrDropped checks what the hub guarantees a phone under lost and
// late messages: it trains to the end of the run (a push accepted in the
// last few iterations), or the hub dropped it for missing MaxMisses
// deadlines in a row, as it drops a phone too slow for the deadline
// (docs/faults.md). No phone just stops. It returns how many trained to
// the end.
func toTheEndOrDropped(t *testing.T, res *RunResult, r *runner) int {
	t.Helper()
	n := 0
	for _, p := range r.phones {
		last := r.lastPush(p.spec.Name)
		switch {
		case last >= res.Iterations-4:
			n++
		case logLacks(res, "hub: dropped "+p.spec.Name) == nil:
			t.Logf("%s: dropped by the hub; last push accepted for iteration %d", p.spec.Name, last)
		default:
			t.Errorf("%s: last push accepted for iteration %d of %d, and the hub did not drop it; log:\n%s",
				p.spec.Name, last, res.Iterations, strings.Join(res.Log, "\n"))
		}
	}
	return n
}

// TestSimMessageLoss: with 3% of messages lost outright (the connection
// staying up), the hub closes each iteration that lacks a push at its
// deadline, a worker that missed a Merged or a ResyncAnswer is resynced,
// and the run reaches its iterations with the invariants checked at every
// iteration and the phones training, bar one the hub may drop after 3
// missed deadlines in a row. Without the deadline the same
// run stalls on its first lost push: the loss bites, and it is the deadline
// that recovers it.
func TestSimMessageLoss(t *testing.T) {
	res, r := faultRun(t, "iterations 80\nnetwork loss=0.02\n")
	if res.Faults.Lost < 5 {
		t.Errorf("%d messages lost, want several (2%% of about %d)", res.Faults.Lost, 6*res.Iterations)
	}
	if miss := logLacks(res, "lost", "hub: late", "resync"); miss != nil {
		t.Errorf("log lacks %q:\n%s", miss, strings.Join(res.Log, "\n"))
	}
	if n := toTheEndOrDropped(t, res, r); n < 2 {
		t.Errorf("%d phones trained to the end, want at least 2 of 3", n)
	}
	if acc := res.FinalAccuracy(); acc < 0.95 {
		t.Errorf("final accuracy %.3f, want >= 0.95", acc)
	}

	// The control: no deadline. Validate refuses it; run anyway, it stalls.
	sc, err := ParseScenario(strings.NewReader(faultBase + "iterations 80\nnetwork loss=0.02\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Deadline = 0
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("loss without a deadline validated: %v", err)
	}
	if _, _, err := runOne(sc); err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("loss without a deadline: %v, want a stall", err)
	}
}

// TestSimDelaySpikes: 3% of messages held up 1.5 to 4.5 s (longer than
// the 2 s deadline, more often than not; and the messages behind them on
// the same connection wait too), and 5% hit by a TCP retransmission
// (200 ms, doubling): nothing is lost, a push that comes too late makes its
// worker late (resynced, then back), and the run finishes with the phones
// training, bar one the hub may drop after 3 late pushes in a row.
func TestSimDelaySpikes(t *testing.T) {
	res, r := faultRun(t, "iterations 80\nnetwork spike=0.03:3s retransmit=0.05:200ms\n")
	if res.Faults.Lost != 0 || res.Faults.Delayed < 10 {
		t.Errorf("faults %+v: want none lost and at least 10 delayed", res.Faults)
	}
	if miss := logLacks(res, "hub: late", "resync"); miss != nil {
		t.Errorf("log lacks %q (no spike outlasted the deadline?):\n%s", miss, strings.Join(res.Log, "\n"))
	}
	if n := toTheEndOrDropped(t, res, r); n < 2 {
		t.Errorf("%d phones trained to the end, want at least 2 of 3", n)
	}
	if acc := res.FinalAccuracy(); acc < 0.95 {
		t.Errorf("final accuracy %.3f, want >= 0.95", acc)
	}
}

// TestSimPartition30s: the Meizu walks out of Wi-Fi range for 30 s. The
// hub marks it late at each deadline and drops it after 3; the two Nexus
// phones carry on through the window; its connection dies after 20 s
// without an answer; once back in range its session dials again, registers
// and trains to the end of the run.
func TestSimPartition30s(t *testing.T) {
	const at, dur = 10 * time.Second, 30 * time.Second
	res, r := faultRun(t, "iterations 300\nfault at=10s partition=meizu-mx3 for=30s\n")
	from, to := at.Nanoseconds(), (at + dur).Nanoseconds()
	if miss := logLacks(res, "meizu-mx3 cut off for 30s", "hub: late meizu-mx3", "hub: dropped meizu-mx3",
		"meizu-mx3: connection lost", "meizu-mx3: reconnects", "hub: joined meizu-mx3"); miss != nil {
		t.Errorf("log lacks %q:\n%s", miss, strings.Join(res.Log, "\n"))
	}
	// Cut off: nothing from it in the window (a push on the air at its
	// start is lost with the connection).
	if n, _ := r.pushesIn("meizu-mx3", from, to); n != 0 {
		t.Errorf("meizu-mx3: %d pushes accepted while cut off", n)
	}
	// The others carry on: at a deadline's pace at worst.
	for _, name := range []string{"nexus-6p-1", "nexus-6p-2"} {
		if n, _ := r.pushesIn(name, from, to); n < 15 {
			t.Errorf("%s: %d pushes accepted during the partition, want >= 15 (the run went on)", name, n)
		}
	}
	// Back: training again soon after the window, and to the end.
	if n, s := r.pushesIn("meizu-mx3", to, to+int64(10*time.Second)); n < 3 || s == 0 {
		t.Errorf("meizu-mx3: %d pushes (%d samples) in the 10 s after the partition, want >= 3", n, s)
	}
	everyPhoneToTheEnd(t, res, r)
	if res.Faults.Reconnects != 1 {
		t.Errorf("%d reconnects, want 1", res.Faults.Reconnects)
	}
	if acc := res.FinalAccuracy(); acc < 0.95 {
		t.Errorf("final accuracy %.3f, want >= 0.95", acc)
	}
}

// TestFaultDeterminism: a run with every kind of fault is the same, bit for
// bit and line for line of its log, from the same seed; another seed loses
// other messages.
func TestFaultDeterminism(t *testing.T) {
	const extra = "iterations 50\nnetwork loss=0.03 spike=0.05:3s retransmit=0.05:200ms conn-timeout=5s\nfault at=5s partition=nexus-6p-2 for=8s\n"
	run := func(seed uint64) *RunResult {
		sc, err := ParseScenario(strings.NewReader(faultBase + extra))
		if err != nil {
			t.Fatal(err)
		}
		sc.Seed = seed
		res, _, err := runOne(sc)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(1), run(1)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs with seed 1 differ: faults %+v and %+v", a.Faults, b.Faults)
	}
	if c := run(2); reflect.DeepEqual(a.Log, c.Log) {
		t.Fatal("seeds 1 and 2 gave the same log")
	}
}

// TestNetworkFaults checks route's model directly: no draw without faults,
// the loss and spike rates and sizes, retransmission backoff, delivery in
// order, and partitions that hold or lose.
func TestNetworkFaults(t *testing.T) {
	const ms = int64(time.Millisecond)
	spec := NetworkSpec{Bandwidth: 8e6, Latency: time.Millisecond, Medium: "links", RTO: DefaultRTO, ConnTimeout: DefaultConnTimeout}

	t.Run("none", func(t *testing.T) {
		n := newNetwork(spec, false)
		if at, lost := n.route("a", true, 0, 5*ms); at != 5*ms || lost {
			t.Fatalf("no faults: %d %v", at, lost)
		}
	})
	t.Run("rates", func(t *testing.T) {
		s := spec
		s.Loss, s.Spike, s.SpikeDelay = 0.1, 0.2, 100*time.Millisecond
		n := newNetwork(s, false)
		n.withFaults(s, rand.New(rand.NewPCG(1, 3)), nil)
		const trials = 20000
		spikes := 0
		for i := range trials {
			now := int64(i) * 1000 * ms // far apart: no waiting in order
			at, lost := n.route(fmt.Sprint(i%7), i%2 == 0, now, now+ms)
			if lost {
				continue
			}
			if d := at - now - ms; d != 0 {
				spikes++
				if d < 50*ms || d > 150*ms {
					t.Fatalf("spike of %d ms, want 50..150", d/ms)
				}
			}
		}
		// 4 standard deviations of a binomial.
		within := func(got int, p float64, n int) bool {
			return math.Abs(float64(got)-p*float64(n)) < 4*math.Sqrt(p*(1-p)*float64(n))
		}
		if !within(n.stats.Lost, 0.1, trials) || !within(spikes, 0.2, trials-n.stats.Lost) || n.stats.Delayed != spikes {
			t.Errorf("lost %d, spiked %d (delayed %d) of %d: want about 10%% and 20%% of the rest", n.stats.Lost, spikes, n.stats.Delayed, trials)
		}
	})
	t.Run("retransmit", func(t *testing.T) {
		s := spec
		s.Retransmit = 0.5
		n := newNetwork(s, false)
		n.withFaults(s, rand.New(rand.NewPCG(2, 3)), nil)
		seen := map[int64]bool{}
		for i := range 2000 {
			now := int64(i) * 100_000 * ms // farther apart than 8 backed-off RTOs
			at, _ := n.route("a", true, now, now+ms)
			seen[at-now-ms] = true
		}
		// 0, 200, 200+400, 200+400+800, ...: sums of the doubling RTO.
		for d := range seen {
			if d%(200*ms) != 0 || (d/(200*ms)+1)&(d/(200*ms)) != 0 {
				t.Fatalf("delay %d ms is no sum of backed-off RTOs", d/ms)
			}
		}
		if !seen[0] || !seen[200*ms] || !seen[600*ms] {
			t.Errorf("delays seen %v, want 0, 200 and 600 ms among them", seen)
		}
	})
	t.Run("in order", func(t *testing.T) {
		s := spec
		s.Spike, s.SpikeDelay = 0.5, time.Second
		n := newNetwork(s, false)
		n.withFaults(s, rand.New(rand.NewPCG(3, 3)), nil)
		var last [2]int64
		for i := range 500 {
			now := int64(i) * 10 * ms
			up := i%3 == 0
			at, _ := n.route("a", up, now, now+ms)
			d := 0
			if up {
				d = 1
			}
			if at < last[d] {
				t.Fatalf("message %d arrives at %d ms, before the one sent ahead of it (%d ms)", i, at/ms, last[d]/ms)
			}
			last[d] = at
		}
	})
	t.Run("partitions", func(t *testing.T) {
		s := spec
		s.ConnTimeout = 5 * time.Second
		n := newNetwork(s, false)
		sec := int64(time.Second)
		n.withFaults(s, rand.New(rand.NewPCG(4, 3)), map[string][]window{
			"short": {{10 * sec, 13 * sec}}, // outlasted by the connection: held
			"long":  {{10 * sec, 40 * sec}}, // breaks it: lost
		})
		cases := []struct {
			phone         string
			start, arrive int64
			want          int64
			lost          bool
		}{
			{"short", 9 * sec, 9*sec + ms, 9*sec + ms, false},         // before
			{"short", 10*sec - ms, 10*sec + ms, 13*sec + 2*ms, false}, // on the air at the start: resent after
			{"short", 12 * sec, 12*sec + ms, 13*sec + 2*ms, false},    // during: resent after, behind the one before
			{"short", 13 * sec, 13*sec + ms, 13*sec + 2*ms, false},    // after, behind the held ones
			{"long", 11 * sec, 11*sec + ms, 0, true},
			{"long", 40 * sec, 40*sec + ms, 40*sec + ms, false},
			{"other", 12 * sec, 12*sec + ms, 12*sec + ms, false},
		}
		for i, c := range cases {
			at, lost := n.route(c.phone, false, c.start, c.arrive)
			if lost != c.lost || (!lost && at != c.want) {
				t.Errorf("#%d %s: at %d lost %v, want %d %v", i, c.phone, at, lost, c.want, c.lost)
			}
		}
		if _, cut := n.cut("long", 39*sec); !cut || !n.breaks(window{10 * sec, 40 * sec}) || n.breaks(window{10 * sec, 13 * sec}) {
			t.Error("cut or breaks wrong")
		}
	})
}

// TestParseFaults: the fault keys, their values, and every refusal with
// its line.
func TestParseFaults(t *testing.T) {
	base := "name t\ndevice nexus-6p\ndevice meizu-mx3 name=meizu-mx3\ndeadline 2s\n"
	sc, err := ParseScenario(strings.NewReader(base +
		"network loss=0.01 retransmit=0.02 spike=0.03:300ms conn-timeout=15s\nfault at=20s partition=meizu-mx3 for=30s\n"))
	if err != nil {
		t.Fatal(err)
	}
	n := sc.Network
	if n.Loss != 0.01 || n.Retransmit != 0.02 || n.RTO != DefaultRTO || n.Spike != 0.03 || n.SpikeDelay != 300*time.Millisecond ||
		n.ConnTimeout != 15*time.Second || len(sc.Faults) != 1 || sc.Faults[0] != (Fault{At: 20 * time.Second, Device: "meizu-mx3", Partition: true, For: 30 * time.Second}) {
		t.Fatalf("parsed %+v, faults %+v", n, sc.Faults)
	}
	if sc, err := ParseScenario(strings.NewReader(base + "network retransmit=0.1:1s\n")); err != nil || sc.Network.RTO != time.Second {
		t.Fatalf("retransmit with an RTO: %v", err)
	}
	d, _ := ParseScenario(strings.NewReader("name t\ndevice nexus-6p\n"))
	if d.Network.ConnTimeout != DefaultConnTimeout || d.Network.armed(d.Faults) {
		t.Errorf("defaults: %+v", d.Network)
	}
	cases := []struct{ name, text, want string }{
		{"loss above 1", base + "network loss=1.5\n", `line 5: loss="1.5": want a probability in [0, 1)`},
		{"loss of 1", base + "network loss=1\n", "line 5: loss"},
		{"negative loss", base + "network loss=-0.1\n", "line 5: loss"},
		{"loss not a number", base + "network loss=some\n", "line 5: loss"},
		{"spike without delay", base + "network spike=0.1\n", "line 5: spike=\"0.1\": want PROBABILITY:DELAY"},
		{"spike bad delay", base + "network spike=0.1:soon\n", "line 5: spike"},
		{"spike zero delay", base + "network spike=0.1:0s\n", "positive duration"},
		{"retransmit bad rto", base + "network retransmit=0.1:-1s\n", "line 5: retransmit"},
		{"conn-timeout zero", base + "network conn-timeout=0s\n", "line 5: conn-timeout"},
		{"partition without for", base + "fault at=1s partition=meizu-mx3\n", "line 5: a partition needs for"},
		{"for without partition", base + "fault at=1s leave=meizu-mx3 for=3s\n", "line 5: a partition needs for"},
		{"partition and leave", base + "fault at=1s partition=meizu-mx3 leave=meizu-mx3 for=3s\n", "a fault is one of leave, join or partition"},
		{"bad for", base + "fault at=1s partition=meizu-mx3 for=long\n", `line 5: for="long"`},
		{"partition of nobody", base + "fault at=1s partition=ghost for=3s\n", "ghost"},
		{"loss without deadline", "name t\ndevice nexus-6p\nnetwork loss=0.01\n", "need a deadline"},
		{"partition without deadline", "name t\ndevice nexus-6p\ndevice meizu-mx3 name=meizu-mx3\nfault at=1s partition=meizu-mx3 for=3s\n", "need a deadline"},
	}
	for _, tc := range cases {
		_, err := ParseScenario(strings.NewReader(tc.text))
		if err == nil || !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrScenario mentioning %q", tc.name, err, tc.want)
		}
	}
	// A scenario built in code is checked too.
	sc.Network.Spike, sc.Network.SpikeDelay = 0.5, 0
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "spike") {
		t.Errorf("spike without a delay validated: %v", err)
	}
}

// TestDriftResyncs: with the hub's weights hash in every Merged (hash on),
// a phone whose weights drift by one ulp finds it at its next step, asks for
// the hub's state and holds the hub's weights again, bit for bit: the
// worker's hash-compare-and-resync path, counted in the report. Without
// the hash nothing would tell the phone, and such a scenario is refused.
func TestDriftResyncs(t *testing.T) {
	rep := simulate(t, "drift", Options{}, nil)
	r := rep.Run("adaptive")
	t.Logf("%s", strings.Join(r.Log, "\n"))
	if r.Mismatches != 1 || r.Resynced != 1 {
		t.Fatalf("mismatches %d, resynced %d; want 1 and 1", r.Mismatches, r.Resynced)
	}
	if r.Iterations != 30 || r.Devices[1].Samples == 0 {
		t.Errorf("%d iterations, the Meizu computed %d samples: want 30, and the Meizu back at work", r.Iterations, r.Devices[1].Samples)
	}
	sc, err := LoadScenario("drift")
	if err != nil {
		t.Fatal(err)
	}
	sc.Hash = false
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "without hash on") {
		t.Errorf("a diverge fault without the hash: %v, want a refusal", err)
	}
}

// TestPhoneSleeps runs phone-sleeps: the Meizu sleeps for 60 s from 10 s,
// its connection surviving. Under the fixed 10 s deadline the two awake
// phones wait about 30 s for it (three deadlines before the hub drops it);
// under the measured deadline a few seconds. Both runs train the same
// model: only the time differs.
func TestPhoneSleeps(t *testing.T) {
	if testing.Short() {
		t.Skip("two 300-iteration runs; skipped with -short")
	}
	rep := simulate(t, "phone-sleeps", Options{}, nil)
	fixed, measured := rep.Run("adaptive fixed-deadline"), rep.Run("adaptive measured-deadline")
	if fixed == nil || measured == nil {
		t.Fatalf("runs %v", rep.Runs)
	}
	t.Logf("waiting for the sleeper: fixed %.2f s, measured %.2f s (%.1fx less); runs end at %.2f and %.2f s",
		fixed.DeadlineWait, measured.DeadlineWait, fixed.DeadlineWait/measured.DeadlineWait, fixed.End, measured.End)
	if fixed.DeadlineWait < 29 || fixed.DeadlineWait > 31 {
		t.Errorf("fixed deadline: the others waited %.2f s, want about 3 deadlines of 10 s", fixed.DeadlineWait)
	}
	if measured.DeadlineWait > fixed.DeadlineWait/4 || measured.DeadlineWait <= 0 {
		t.Errorf("measured deadline: the others waited %.2f s, want under a quarter of the fixed rule's %.2f s",
			measured.DeadlineWait, fixed.DeadlineWait)
	}
	if fixed.End-measured.End < 20 {
		t.Errorf("runs end at %.2f s (fixed) and %.2f s (measured): want the measured one 20 s or more sooner", fixed.End, measured.End)
	}
	if fixed.FinalAccuracy() != measured.FinalAccuracy() || fixed.Samples != measured.Samples {
		t.Errorf("fixed: %d samples, accuracy %v; measured: %d samples, accuracy %v; want the same training",
			fixed.Samples, fixed.FinalAccuracy(), measured.Samples, measured.FinalAccuracy())
	}
}

package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cotrain/cotrain/models"
)

// TestClockOrder: events run by time, ties in scheduling order, and one
// scheduled in the past runs now.
func TestClockOrder(t *testing.T) {
	var c clock
	var got []string
	c.at(20, func() { got = append(got, "b") })
	c.at(10, func() {
		got = append(got, "a")
		c.at(5, func() { got = append(got, "a-late") }) // in the past: now, after the others due now
	})
	c.at(20, func() { got = append(got, "c") })
	c.at(10, func() { got = append(got, "a2") })
	for c.step() {
	}
	want := []string{"a", "a2", "a-late", "b", "c"}
	if !slices.Equal(got, want) || c.now != 20 {
		t.Fatalf("order %v at %d, want %v at 20", got, c.now, want)
	}
}

// TestNetworkMedia: on a shared medium transfers queue one behind the
// other; on links only those of the same phone do; loopback costs nothing.
func TestNetworkMedia(t *testing.T) {
	spec := NetworkSpec{Bandwidth: 8e6, Latency: time.Millisecond, Medium: "shared"} // 1 MB/s
	const ms = int64(time.Millisecond)
	type xfer struct {
		now   int64
		phone string
		size  int
		want  [3]int64 // start, end, arrive
	}
	cases := []struct {
		medium string
		xfers  []xfer
	}{
		{"shared", []xfer{
			{0, "a", 1000, [3]int64{0, 1 * ms, 2 * ms}},
			{0, "b", 2000, [3]int64{1 * ms, 3 * ms, 4 * ms}},
			{10 * ms, "a", 1000, [3]int64{10 * ms, 11 * ms, 12 * ms}},
		}},
		{"links", []xfer{
			{0, "a", 1000, [3]int64{0, 1 * ms, 2 * ms}},
			{0, "b", 2000, [3]int64{0, 2 * ms, 3 * ms}},
			{0, "a", 1000, [3]int64{1 * ms, 2 * ms, 3 * ms}},
		}},
		{"loopback", []xfer{{5, "a", 1 << 20, [3]int64{5, 5, 5}}}},
	}
	for _, tc := range cases {
		s := spec
		s.Medium = tc.medium
		n := newNetwork(s, tc.medium == "loopback")
		for i, x := range tc.xfers {
			a, b, c := n.transfer(x.now, x.phone, x.size)
			if [3]int64{a, b, c} != x.want {
				t.Errorf("%s #%d: %d %d %d, want %v", tc.medium, i, a, b, c, x.want)
			}
		}
	}
}

// TestDeviceModel: calibration, jitter from the injected generator only,
// throttling after sustained load and recovery after rest.
func TestDeviceModel(t *testing.T) {
	ref, err := TrainFLOPs(RefModel, models.Config{}, RefBatch)
	if err != nil {
		t.Fatal(err)
	}
	nexus, _ := lookupProfile(nil, "nexus-6p")
	meizu, _ := lookupProfile(nil, "meizu-mx3")
	for _, tc := range []struct {
		p    Profile
		want time.Duration
	}{{nexus, 500 * time.Millisecond}, {meizu, 2800 * time.Millisecond}} {
		d := newDevice(tc.p, ref, DeviceSpec{Throttle: 1}, nil)
		if got := d.compute(0, ref); got != tc.want.Nanoseconds() {
			t.Errorf("%s: reference step %v, want %v", tc.p.Name, time.Duration(got), tc.want)
		}
	}
	// Jitter: the same generator seed gives the same times.
	spec := DeviceSpec{Jitter: 0.1, Throttle: 1}
	a := newDevice(nexus, ref, spec, rand.New(rand.NewPCG(1, 2)))
	b := newDevice(nexus, ref, spec, rand.New(rand.NewPCG(1, 2)))
	var sa, sb []int64
	for i := range 20 {
		sa = append(sa, a.compute(int64(i)*1e10, ref))
		sb = append(sb, b.compute(int64(i)*1e10, ref))
	}
	if !slices.Equal(sa, sb) || slices.Min(sa) == slices.Max(sa) {
		t.Fatalf("jitter: %v vs %v (want equal and varied)", sa, sb)
	}
	// Throttling: 0.5 s steps back to back throttle to half speed after
	// 2 s of heat; 10 s of rest cools the phone down.
	d := newDevice(nexus, ref, DeviceSpec{ThrottleAfter: 2 * time.Second, Throttle: 0.5}, nil)
	now := int64(0)
	var steps []int64
	for range 7 {
		dur := d.compute(now, ref)
		steps = append(steps, dur)
		now += dur
	}
	half, full := int64(500*time.Millisecond), int64(1000*time.Millisecond)
	if !slices.Equal(steps, []int64{half, half, half, half, half, full, full}) {
		t.Fatalf("steps %v: want 5 at 0.5 s (heat 2.5 s > 2 s), then 1 s", steps)
	}
	if got := d.compute(now+10e9, ref); got != half {
		t.Fatalf("after rest: %v, want 0.5 s", time.Duration(got))
	}
}

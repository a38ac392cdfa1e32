package data

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// dominant returns the frequency (Hz) of the largest DFT bin of x less its
// mean, between lo and hi Hz: a slow DFT, the reference for a test.
func dominant(x []float64, rate, lo, hi float64) float64 {
	var m float64
	for _, v := range x {
		m += v / float64(len(x))
	}
	best, bestF := 0.0, 0.0
	n := float64(len(x))
	for k := 1; float64(k) < n/2; k++ {
		f := float64(k) * rate / n
		if f < lo || f > hi {
			continue
		}
		var re, im float64
		for i, v := range x {
			a := 2 * math.Pi * float64(k) * float64(i) / n
			re += (v - m) * math.Cos(a)
			im -= (v - m) * math.Sin(a)
		}
		if p := re*re + im*im; p > best {
			best, bestF = p, f
		}
	}
	return bestF
}

// The model's recordings have the physics its documentation claims:
// about 1 g on average, the step frequency in the cadence range (found as
// the strongest component of the magnitude), movement that grows from
// still to walking to running, and a posture (the axis gravity lies
// along) that tells sitting from standing.
func TestAccelRecordingPhysics(t *testing.T) {
	const rate, n = 50, 50 * 20
	type stats struct{ mean, sd, freq, y, z float64 }
	measure := func(act string, seed uint64) stats {
		rec, err := AccelRecording(act, n, rate, rand.New(rand.NewPCG(seed, splitmix64(seed))))
		if err != nil {
			t.Fatal(err)
		}
		mag := make([]float64, n)
		var s stats
		for i := range n {
			x, y, z := float64(rec[3*i]), float64(rec[3*i+1]), float64(rec[3*i+2])
			mag[i] = math.Sqrt(x*x + y*y + z*z)
			s.mean += mag[i] / n
			s.y += y / n
			s.z += z / n
		}
		for _, m := range mag {
			s.sd += (m - s.mean) * (m - s.mean) / n
		}
		s.sd = math.Sqrt(s.sd)
		s.freq = dominant(mag, rate, 0.5, 10)
		return s
	}
	for seed := range uint64(3) {
		walk, run, stairs := measure("walking", seed), measure("running", seed), measure("stairs", seed)
		sit, stand := measure("sitting", seed), measure("standing", seed)
		for _, c := range []struct {
			name     string
			s        stats
			fLo, fHi float64
		}{{"walking", walk, 1.5, 2.2}, {"running", run, 2.4, 3.1}, {"stairs", stairs, 1.2, 1.8}} {
			if c.s.freq < c.fLo || c.s.freq > c.fHi {
				t.Errorf("seed %d %s: dominant frequency %.2f Hz, want %v–%v", seed, c.name, c.s.freq, c.fLo, c.fHi)
			}
		}
		for _, c := range []struct {
			name string
			s    stats
		}{{"sitting", sit}, {"standing", stand}, {"walking", walk}} {
			if math.Abs(c.s.mean-1) > 0.1 {
				t.Errorf("seed %d %s: mean magnitude %.3f g, want about 1", seed, c.name, c.s.mean)
			}
		}
		t.Logf("seed %d: σ|a| walking %.3f running %.3f stairs %.3f; f %.2f %.2f %.2f", seed, walk.sd, run.sd, stairs.sd, walk.freq, run.freq, stairs.freq)
		if !(sit.sd < 0.02 && stand.sd < 0.02 && walk.sd > 0.1 && run.sd > 1.5*walk.sd) {
			t.Errorf("seed %d: σ of |a| sitting %.3f standing %.3f walking %.3f running %.3f, want still < 0.02 < 0.1 < walking < running/1.5",
				seed, sit.sd, stand.sd, walk.sd, run.sd)
		}
		if !(math.Abs(stand.y) > 0.8 && math.Abs(stand.z) < 0.4 && math.Abs(sit.y) < 0.4 && math.Abs(sit.z) > 0.8) {
			t.Errorf("seed %d: mean y, z standing (%.2f, %.2f), sitting (%.2f, %.2f): gravity along ±y standing, along ±z sitting",
				seed, stand.y, stand.z, sit.y, sit.z)
		}
	}
	if _, err := AccelRecording("dancing", 10, 50, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("an unknown activity is accepted")
	}
	if _, err := AccelRecording("walking", 0, 50, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("0 samples are accepted")
	}
}

// GenerateAccel writes the folder layout LoadSensorFolder reads, the same
// bytes for the same seed and others for another.
func TestGenerateAccel(t *testing.T) {
	dir := t.TempDir()
	opt := AccelOptions{Recordings: 2, Seconds: 6, Seed: 7}
	if err := GenerateAccel(dir, opt); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadSensorFolder(dir, SensorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 300 rows → 3 windows, 2 recordings, 5 activities.
	if ds.Len() != 30 || !slices.Equal(ds.ClassNames(), AccelActivities()) || !slices.Equal(ds.Channels(), []string{"x", "y", "z"}) {
		t.Errorf("%d windows of %v, channels %v", ds.Len(), ds.ClassNames(), ds.Channels())
	}
	read := func(d string) []byte {
		b, err := os.ReadFile(filepath.Join(d, "walking", "rec-001.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	again := t.TempDir()
	if err := GenerateAccel(again, AccelOptions{Activities: []string{"walking"}, Recordings: 2, Seconds: 6, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(dir), read(again)) {
		t.Error("the same seed wrote different walking/rec-001.csv when fewer activities were asked for")
	}
	other := t.TempDir()
	if err := GenerateAccel(other, AccelOptions{Activities: []string{"walking"}, Recordings: 2, Seconds: 6, Seed: 8}); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(read(dir), read(other)) {
		t.Error("seeds 7 and 8 wrote the same recording")
	}
	if err := GenerateAccel(t.TempDir(), AccelOptions{Activities: []string{"flying"}}); err == nil {
		t.Error("an unknown activity is accepted")
	}
}

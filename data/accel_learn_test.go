package data

import (
	"math"
	"testing"
)

// windowFeatures returns simple features of a raw 3×L window in g: the
// size of the mean of each axis (its sign depends on how the phone sits in
// the pocket), the σ of |a| and the dominant frequency of |a| (0
// when |a| hardly varies).
func windowFeatures(w []float32, l int, rate float64) []float64 {
	f := make([]float64, 5)
	mag := make([]float64, l)
	for t := range l {
		x, y, z := float64(w[t]), float64(w[l+t]), float64(w[2*l+t])
		f[0] += x / float64(l)
		f[1] += y / float64(l)
		f[2] += z / float64(l)
		mag[t] = math.Sqrt(x*x + y*y + z*z)
	}
	f[0], f[1], f[2] = math.Abs(f[0]), math.Abs(f[1]), math.Abs(f[2])
	var m float64
	for _, v := range mag {
		m += v / float64(l)
	}
	for _, v := range mag {
		f[3] += (v - m) * (v - m) / float64(l)
	}
	f[3] = math.Sqrt(f[3])
	if f[3] > 0.05 { // a gait: its frequency means something
		f[4] = dominant(mag, rate, 0.5, 5) / 3
	}
	return f
}

// The generated activities are told apart by a nearest-centroid classifier
// on five hand-made features, trained on one seed's recordings and tested
// on another's: the windows carry what an activity model needs, and the
// figure is a floor for har-cnn on the same data.
func TestAccelActivitiesSeparable(t *testing.T) {
	load := func(seed uint64) *Signals {
		dir := t.TempDir()
		if err := GenerateAccel(dir, AccelOptions{Recordings: 4, Seconds: 20, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		ds, err := LoadSensorFolder(dir, SensorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	train, test := load(1), load(2)
	k := train.Classes()
	cent := make([][]float64, k)
	count := make([]int, k)
	for i := range train.Len() {
		c := train.Label(i)
		f := windowFeatures(train.Raw(i), DefaultWindow, 50)
		if cent[c] == nil {
			cent[c] = make([]float64, len(f))
		}
		for j := range f {
			cent[c][j] += f[j]
		}
		count[c]++
	}
	for c := range cent {
		for j := range cent[c] {
			cent[c][j] /= float64(count[c])
		}
	}
	right := 0
	confusion := make([][]int, k)
	for c := range confusion {
		confusion[c] = make([]int, k)
	}
	for i := range test.Len() {
		f := windowFeatures(test.Raw(i), DefaultWindow, 50)
		best, bestD := 0, math.Inf(1)
		for c := range cent {
			d := 0.0
			for j := range f {
				d += (f[j] - cent[c][j]) * (f[j] - cent[c][j])
			}
			if d < bestD {
				best, bestD = c, d
			}
		}
		confusion[test.Label(i)][best]++
		if int32(best) == test.Label(i) {
			right++
		}
	}
	acc := float64(right) / float64(test.Len())
	t.Logf("nearest centroid, seed 1 → seed 2: %d/%d windows right (%.3f); confusion (rows true %v): %v",
		right, test.Len(), acc, train.ClassNames(), confusion)
	if acc < 0.9 {
		t.Errorf("held-out accuracy %.3f, want at least 0.9", acc)
	}
}

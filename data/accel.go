package data

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// AccelActivities returns the activities GenerateAccel can record, in the
// order it writes them.
func AccelActivities() []string {
	return []string{"running", "sitting", "stairs", "standing", "walking"}
}

// gait describes one activity of the accelerometer model (see
// AccelRecording). Frequencies in Hz, accelerations in g, angles in degrees.
type gait struct {
	stepLo, stepHi float64    // step frequency range, drawn per recording
	ampLo, ampHi   float64    // vertical amplitude of the fundamental
	harm           [3]float64 // weights of the 1st, 2nd and 3rd harmonics
	pitch          float64    // thigh angle from vertical: 0 upright, 90 seated
	wobble         float64    // σ of soft-tissue and pocket motion, g
}

// gaitOf returns the model of activity. Sources, for the figures that have
// one (the rest are this model's assumptions, chosen to look like the
// recordings in those papers, not fitted to data):
//
//   - Walking cadence 1.6–2.1 steps/s (96–126 steps/min): the usual range
//     of free walking; Pachi and Ji ("Frequency and velocity of people
//     walking", The Structural Engineer, 2005) measured a mean of about
//     1.9 Hz.
//   - Running cadence 2.5–3.0 steps/s (150–180 steps/min): Heiderscheit et
//     al. ("Effects of step rate manipulation on joint mechanics during
//     running", Med. Sci. Sports Exerc., 2011) report preferred step rates
//     near 2.9 steps/s.
//   - Stair climbing 1.3–1.7 steps/s with the thigh pitched forward more
//     than on level ground: an assumption (slower than level walking, as
//     in UCI HAR's WALKING_UPSTAIRS windows).
//   - Amplitudes of the vertical acceleration at the thigh: about 0.3–0.5 g
//     walking and 1.0–1.6 g running — the swings visible in WISDM's
//     trouser-pocket recordings (Kwapisz, Weiss and Moore 2010, whose
//     walking and jogging plots span a few m/s² and over 10 m/s²).
//   - Sensor noise: 180 µg/√Hz (Bosch BMI160 data sheet), about 1 mg RMS
//     over a 25 Hz bandwidth; the wobble of the phone in the pocket adds
//     far more than that, an assumption of 0.02–0.05 g moving and 0.003 g
//     still.
func gaitOf(activity string) (gait, bool) {
	switch activity {
	case "walking":
		return gait{stepLo: 1.6, stepHi: 2.1, ampLo: 0.3, ampHi: 0.5, harm: [3]float64{1, 0.5, 0.2}, pitch: 10, wobble: 0.02}, true
	case "running":
		return gait{stepLo: 2.5, stepHi: 3.0, ampLo: 1.0, ampHi: 1.6, harm: [3]float64{1, 0.6, 0.35}, pitch: 15, wobble: 0.05}, true
	case "stairs":
		return gait{stepLo: 1.3, stepHi: 1.7, ampLo: 0.25, ampHi: 0.45, harm: [3]float64{1, 0.3, 0.1}, pitch: 30, wobble: 0.02}, true
	case "standing":
		return gait{pitch: 0, wobble: 0.003}, true
	case "sitting":
		return gait{pitch: 85, wobble: 0.003}, true
	}
	return gait{}, false
}

// sensorNoise is the RMS white noise of the sensor at 50 Hz (180 µg/√Hz
// over 25 Hz), scaled with the bandwidth for other rates.
func sensorNoise(rate float64) float64 { return 180e-6 * math.Sqrt(rate/2) }

// AccelRecording returns n samples at rate Hz of a simulated 3-axis
// accelerometer in a front trouser pocket during activity (one of
// AccelActivities), as n rows of x, y, z in g (gravity included, as a
// phone's accelerometer reports it: +1 g upward at rest), drawn from r.
//
// The model, in the body's frame (up, forward, lateral):
//   - gravity: +1 g up;
//   - gait (walking, running, stairs): a step cycle whose frequency is drawn
//     per recording and drifts by a few percent (a random walk), the
//     vertical acceleration a sum of three harmonics of the step frequency
//     with an amplitude that varies ±10% step to step, never below 0 g (free
//     fall, running's flight phase), the forward one half
//     as strong and a quarter cycle later, the lateral one at the stride
//     frequency (half the step frequency), a third as strong;
//   - posture sway (all activities): the thigh tilts by about a degree at
//     0.1–0.4 Hz;
//   - pocket wobble and sensor noise: white Gaussian (gaitOf holds the σ).
//
// The body frame is turned into the phone's by the thigh's pitch (upright
// standing, about horizontal sitting), a random mounting of ±10° about
// each axis, and one of the four ways a phone goes into a pocket (top up or
// down, screen towards the thigh or away: a half turn about the phone's z
// axis, its y axis, both or neither, equally likely), all drawn per
// recording; readings are clipped to ±8 g, a common phone range. So the
// axis gravity lies along tells posture, but not its sign. Not modelled: a
// phone in another place (hand, bag), transitions between activities,
// sensor bias.
func AccelRecording(activity string, n int, rate float64, r *rand.Rand) ([]float32, error) {
	g, ok := gaitOf(activity)
	if !ok {
		return nil, errorf(ErrInvalid, "data: accel: activity %q, want one of %v", activity, AccelActivities())
	}
	if !(rate >= 1 && rate <= 10000) {
		return nil, errorf(ErrInvalid, "data: accel: rate %v Hz, want 1 to 10000", rate)
	}
	if err := checkSamples(n); err != nil {
		return nil, err
	}
	deg := math.Pi / 180
	// The phone's axes in the body frame: rows of rot are the phone's x, y,
	// z. Upright, y points up (the phone's long side along the thigh), z
	// forward and x lateral; the thigh's pitch turns y and z about x.
	mount := [3]float64{(r.Float64()*20 - 10) * deg, (r.Float64()*20 - 10) * deg, (r.Float64()*20 - 10) * deg}
	// The pocket orientation: a half turn about z negates x and y, about y
	// negates x and z.
	flip := [4][3]float64{{1, 1, 1}, {-1, -1, 1}, {-1, 1, -1}, {1, -1, -1}}[r.IntN(4)]
	step := g.stepLo + r.Float64()*(g.stepHi-g.stepLo)
	amp := g.ampLo + r.Float64()*(g.ampHi-g.ampLo)
	swayF := 0.1 + 0.3*r.Float64()
	swayPh := 2 * math.Pi * r.Float64()
	noise := math.Hypot(g.wobble, sensorNoise(rate))
	out := make([]float32, 0, 3*n)
	phase, drift, stepAmp := 0.0, 1.0, amp*(0.9+0.2*r.Float64())
	for i := range n {
		t := float64(i) / rate
		// Body-frame acceleration (up, forward, lateral), in g.
		up, fwd, lat := 1.0, 0.0, 0.0
		if g.stepHi > 0 {
			prev := phase
			drift += 0.002 * r.NormFloat64()    // cadence random walk,
			drift = min(max(drift, 0.95), 1.05) // kept within ±5%
			phase += 2 * math.Pi * step * drift / rate
			if math.Floor(phase/(2*math.Pi)) != math.Floor(prev/(2*math.Pi)) {
				stepAmp = amp * (0.9 + 0.2*r.Float64()) // a new step
			}
			for k, w := range g.harm {
				h := float64(k + 1)
				up += stepAmp * w * math.Sin(h*phase+0.6*float64(k))
			}
			// A thigh can fall freely (running's flight phase) but is never
			// pulled down faster than gravity.
			up = max(up, 0)
			fwd = 0.5 * stepAmp * math.Sin(phase+math.Pi/2)
			lat = 0.33 * stepAmp * math.Sin(phase/2)
		}
		pitch := g.pitch*deg + 1*deg*math.Sin(2*math.Pi*swayF*t+swayPh)
		// Turn about the lateral axis by the pitch: y and z of the phone.
		y := up*math.Cos(pitch) + fwd*math.Sin(pitch)
		z := -up*math.Sin(pitch) + fwd*math.Cos(pitch)
		v := rotate([3]float64{lat, y, z}, mount)
		v[0], v[1], v[2] = v[0]*flip[0], v[1]*flip[1], v[2]*flip[2]
		for k := range v {
			out = append(out, float32(min(max(v[k]+noise*r.NormFloat64(), -8), 8)))
		}
	}
	return out, nil
}

// checkSamples checks that n is a positive count of samples of at most
// 2^28 (3 GiB of float32 rows).
func checkSamples(n int) error {
	if n < 1 {
		return errorf(ErrInvalid, "data: accel: %d samples, want at least 1", n)
	}
	if n > 1<<28 {
		return errorf(ErrTooLarge, "data: accel: %d samples, at most %d", n, 1<<28)
	}
	return nil
}

// rotate turns v by the angles a[0], a[1], a[2] about x, y and z in turn.
func rotate(v [3]float64, a [3]float64) [3]float64 {
	c, s := math.Cos(a[0]), math.Sin(a[0])
	v = [3]float64{v[0], c*v[1] - s*v[2], s*v[1] + c*v[2]}
	c, s = math.Cos(a[1]), math.Sin(a[1])
	v = [3]float64{c*v[0] + s*v[2], v[1], -s*v[0] + c*v[2]}
	c, s = math.Cos(a[2]), math.Sin(a[2])
	return [3]float64{c*v[0] - s*v[1], s*v[0] + c*v[1], v[2]}
}

// AccelOptions says what GenerateAccel writes.
type AccelOptions struct {
	// Activities to record, from AccelActivities; nil means all.
	Activities []string
	// Recordings per activity (default 4), Seconds each (default 30) at
	// Rate Hz (default 50).
	Recordings int
	Seconds    float64
	Rate       float64
	// Seed drives every random choice: the same options write the same
	// bytes.
	Seed uint64
}

// GenerateAccel writes simulated accelerometer recordings (AccelRecording)
// into dir in LoadSensorFolder's layout: dir/<activity>/rec-000.csv, ...,
// each with the header "x,y,z" and one row a sample, values in g with 5
// decimals. Recording k of an activity is drawn from a PCG seeded with
// (opt.Seed, a hash of the activity and k), so adding an activity or a
// recording leaves the others as they were. dir is created if needed;
// files of the same names are overwritten.
func GenerateAccel(dir string, opt AccelOptions) error {
	return eachAccel(opt, func(activity string, k int, rec []float32) error {
		if err := os.MkdirAll(filepath.Join(dir, activity), 0o755); err != nil {
			return fmt.Errorf("data: accel: %w", err)
		}
		return writeCSV(filepath.Join(dir, activity, fmt.Sprintf("rec-%03d.csv", k)), rec)
	})
}

// AccelSignals returns the recordings GenerateAccel writes for opt, cut
// into windows as sopt says, without files: the same values (rounded to
// the 5 decimals the CSV holds), activities as classes in sorted order (as
// LoadSensorFolder reads the folders), channels x, y, z. The simulator
// trains on them (sim's "data accel").
func AccelSignals(opt AccelOptions, sopt SensorOptions) (*Signals, error) {
	sopt, err := sopt.resolve()
	if err != nil {
		return nil, err
	}
	acts := opt.Activities
	if acts == nil {
		acts = AccelActivities()
	}
	classes := slices.Sorted(slices.Values(acts))
	var recs []recording
	err = eachAccel(opt, func(activity string, _ int, rec []float32) error {
		for i, v := range rec {
			rec[i] = float32(math.Round(float64(v)*1e5) / 1e5)
		}
		recs = append(recs, recording{vals: rec, c: 3, label: int32(slices.Index(classes, activity))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// LoadSensorFolder's order: by class, then file name (rec-000, ...).
	slices.SortStableFunc(recs, func(a, b recording) int { return int(a.label - b.label) })
	return windows(recs, 3, classes, []string{"x", "y", "z"}, sopt, "generated recordings")
}

// eachAccel draws the recordings of opt (defaults filled), recording k of
// each activity from a PCG seeded with (opt.Seed, a hash of the activity
// and k), and hands each to fn.
func eachAccel(opt AccelOptions, fn func(activity string, k int, rec []float32) error) error {
	if opt.Recordings == 0 {
		opt.Recordings = 4
	}
	if opt.Seconds == 0 {
		opt.Seconds = 30
	}
	if opt.Rate == 0 {
		opt.Rate = 50
	}
	if opt.Activities == nil {
		opt.Activities = AccelActivities()
	}
	if opt.Recordings < 1 || opt.Recordings > 100000 {
		return errorf(ErrInvalid, "data: accel: %d recordings, want 1 to 100000", opt.Recordings)
	}
	if !(opt.Seconds > 0) || opt.Seconds*opt.Rate > 1<<28 {
		return errorf(ErrInvalid, "data: accel: %v s at %v Hz, want a positive length of at most 2^28 samples", opt.Seconds, opt.Rate)
	}
	n := int(math.Round(opt.Seconds * opt.Rate))
	for _, a := range opt.Activities {
		for k := range opt.Recordings {
			r := rand.New(rand.NewPCG(opt.Seed, splitmix64(fnv64(a)^uint64(k))))
			rec, err := AccelRecording(a, n, opt.Rate, r)
			if err != nil {
				return err
			}
			if err := fn(a, k, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// fnv64 is the FNV-1a hash of s.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// writeCSV writes rows of x, y, z with a header.
func writeCSV(path string, rec []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("data: accel: %w", err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("x,y,z\n")
	var buf []byte
	for i := 0; i < len(rec); i += 3 {
		buf = buf[:0]
		for k := range 3 {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendFloat(buf, float64(rec[i+k]), 'f', 5, 32)
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("data: accel: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("data: accel: %w", err)
	}
	return nil
}

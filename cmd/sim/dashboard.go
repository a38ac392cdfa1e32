package main

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cotrain/cotrain/sim"
	"github.com/cotrain/cotrain/watch"
)

// writeDashboard writes index.html into dir: the same dashboard the hub
// serves, static, showing the scenario's primary run (its phones, curves
// and first iterations' timeline, which the page's title names), a table of every run, and the plots
// writePlots left beside it. images lists those plots' file names; planned
// is the iterations each run was to make.
func writeDashboard(dir string, sc *sim.Scenario, rep *sim.Report, planned int, images []string, now time.Time) error {
	st := dashboardStatus(sc, rep, planned, images, now)
	var buf bytes.Buffer
	if err := watch.WriteStatic(&buf, st); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// dashboardStatus is the primary run as the dashboard's Status. Times are
// simulated seconds. A phone's times are its means per iteration (compute;
// sending, receiving and waiting for the air as communication; idle as
// waiting), its batch its mean batch, its share its part of the samples.
func dashboardStatus(sc *sim.Scenario, rep *sim.Report, planned int, images []string, now time.Time) watch.Status {
	st := watch.Status{State: "ended", TestAccuracy: -1, Images: images,
		Updated: now.UTC().Format(time.RFC3339Nano)}
	for _, r := range rep.Runs {
		st.Runs = append(st.Runs, watch.Run{Name: r.Name, Policy: r.Policy, Iterations: r.Iterations, Seconds: r.End,
			TenIterations: r.TenIterations, ToTarget: r.TimeToTarget, SamplesPerSec: r.SamplesPerSecond(),
			Bytes: r.Bytes, TestAccuracy: r.FinalAccuracy(), Joules: r.Energy, ToTargetJoules: r.EnergyToTarget})
	}
	r := rep.Run(sc.Primary)
	st.Session = watch.Session{Role: "sim", Name: sc.Name, Model: sc.Model, Policy: sc.Primary, Codec: sc.Compression,
		Batch: sc.GlobalBatch, Iterations: uint64(planned)}
	if r == nil {
		return st
	}
	st.Iteration = uint64(r.Iterations)
	st.Elapsed = r.End
	st.Samples = int64(r.Samples)
	st.SamplesPerSec = r.SamplesPerSecond()
	st.TestAccuracy = r.FinalAccuracy()
	// Every frame each way, as the phones' rows count them: the rows add
	// up to these, and these to the runs table's MB sent (Bytes).
	for _, d := range r.Devices {
		st.BytesUp += d.BytesSent
		st.BytesDown += d.BytesReceived
	}
	for _, p := range r.TrainLoss {
		st.LossCurve = append(st.LossCurve, watch.Point{Iteration: uint64(p.Iteration), Value: p.Loss})
		st.Loss = p.Loss
	}
	st.LossCurve = thin(st.LossCurve, watch.MaxPoints)
	for _, p := range r.Curve {
		st.AccuracyCurve = append(st.AccuracyCurve, watch.Point{Iteration: uint64(p.Iteration), Value: p.Accuracy})
		st.HeldOutCurve = append(st.HeldOutCurve, watch.Point{Iteration: uint64(p.Iteration), Value: p.Loss})
	}
	st.AccuracyCurve, st.HeldOutCurve = thin(st.AccuracyCurve, watch.MaxPoints), thin(st.HeldOutCurve, watch.MaxPoints)
	iters := float64(max(r.Iterations, 1))
	for _, d := range r.Devices {
		w := watch.Worker{ID: d.Name, Name: d.Name, Backend: d.Profile, State: "ended",
			Batch: int(math.Round(float64(d.Samples) / iters)), Samples: int64(d.Samples), Iterations: r.Iterations,
			ComputeMS: 1e3 * d.Compute / iters, CommMS: 1e3 * (d.Send + d.Receive + d.AirWait) / iters, WaitMS: 1e3 * d.Idle / iters,
			BytesUp: d.BytesSent, BytesDown: d.BytesReceived}
		if r.Samples > 0 {
			w.Share = float64(d.Samples) / float64(r.Samples)
		}
		if d.Compute > 0 {
			w.SamplesPerSec = float64(d.Samples) / d.Compute
		}
		st.Workers = append(st.Workers, w)
	}
	st.Timeline = timeline(r)
	for _, line := range r.Log[max(len(r.Log)-watch.LogLen, 0):] {
		st.Log = append(st.Log, watch.Event{Kind: "log", Time: now, Data: map[string]string{"text": strings.TrimSpace(line)}})
	}
	return st
}

// timeline turns the run's recorded spans (its first iterations) into the
// dashboard's per-iteration entries: each iteration from its first span's
// start to its last span's end; a phone's compute, its sending, receiving
// and waiting for the air as communication, the rest as waiting.
func timeline(r *sim.RunResult) []watch.Progress {
	type span struct{ start, end float64 }
	byIter := map[int]*span{}
	parts := map[int]map[string]*watch.Tick{}
	for _, s := range r.Timeline {
		if s.Device == "hub" {
			continue
		}
		sp := byIter[s.Iteration]
		if sp == nil {
			sp = &span{s.Start, s.End}
			byIter[s.Iteration], parts[s.Iteration] = sp, map[string]*watch.Tick{}
		}
		sp.start, sp.end = min(sp.start, s.Start), max(sp.end, s.End)
		t := parts[s.Iteration][s.Device]
		if t == nil {
			t = &watch.Tick{ID: s.Device, Name: s.Device}
			parts[s.Iteration][s.Device] = t
		}
		ms := 1e3 * (s.End - s.Start)
		if s.Kind == "compute" {
			t.ComputeMS += ms
		} else {
			t.CommMS += ms
		}
	}
	var out []watch.Progress
	for _, k := range slices.Sorted(maps.Keys(byIter)) {
		sp := byIter[k]
		p := watch.Progress{Iteration: uint64(k) + 1, Seconds: sp.end - sp.start}
		for _, name := range slices.Sorted(maps.Keys(parts[k])) {
			t := *parts[k][name]
			t.WaitMS = max(1e3*p.Seconds-t.ComputeMS-t.CommMS, 0)
			p.Workers = append(p.Workers, t)
		}
		out = append(out, p)
	}
	return out
}

// thin keeps every k-th point, k the smallest that leaves at most n, and
// the last point.
func thin(pts []watch.Point, n int) []watch.Point {
	if len(pts) <= n {
		return pts
	}
	stride := (len(pts) + n - 1) / n
	var out []watch.Point
	for i := 0; i < len(pts); i += stride {
		out = append(out, pts[i])
	}
	if out[len(out)-1] != pts[len(pts)-1] {
		out = append(out, pts[len(pts)-1])
	}
	return out
}

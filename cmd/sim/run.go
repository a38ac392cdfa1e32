package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/chart"
	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/sim"
)

// config is what the flags say.
type config struct {
	Scenario   string
	Seed       uint64
	JSON       bool
	Out        string
	Iterations int
	Policies   string
	Policy     string
	Bandwidth  string
	Parallel   int
	Compress   string
	Overlap    string
	List       bool
}

// run loads the scenario, simulates it, and writes the report: a table (or
// JSON lines) to stdout, progress to stderr, plots to cfg.Out.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	if cfg.List {
		return list(stdout)
	}
	sc, err := sim.LoadScenario(cfg.Scenario)
	if err != nil {
		return err
	}
	if cfg.Seed != 0 {
		sc.Seed = cfg.Seed
	}
	if cfg.Policies != "" {
		sc.Policies = strings.Split(cfg.Policies, ",")
		if !slices.Contains(sc.Policies, sc.Primary) {
			sc.Primary = sc.Policies[len(sc.Policies)-1]
		}
	}
	if cfg.Policy != "" {
		sc.Primary = cfg.Policy
	}
	if cfg.Bandwidth != "" {
		if err := sc.SetBandwidth(cfg.Bandwidth); err != nil {
			return err
		}
	}
	if cfg.Compress != "" {
		sc.Compression = cfg.Compress
	}
	switch cfg.Overlap {
	case "":
	case "on", "off":
		sc.Overlap = cfg.Overlap == "on"
	default:
		return fmt.Errorf("sim: --overlap %q, want on or off", cfg.Overlap)
	}
	if err := sc.Validate(); err != nil {
		return err
	}
	start := time.Now()
	d, err := sim.LoadData(sc, os.Getenv)
	if err != nil {
		return err
	}
	var ev *cli.Events
	if cfg.JSON {
		ev = cli.NewEvents(stdout)
		ev.Emit("start", map[string]any{"scenario": sc.Name, "seed": sc.Seed, "description": sc.Description})
	} else {
		fmt.Fprintf(stdout, "scenario %s (seed %d): %s\n", sc.Name, sc.Seed, sc.Description)
	}
	prog := newProgress(stderr, ev, sc.EvalEvery)
	rep, err := sim.Run(ctx, sc, d, sim.Options{Iterations: cfg.Iterations, Parallel: cfg.Parallel, Progress: prog.update})
	prog.done()
	if err != nil {
		return err
	}
	wall := time.Since(start)
	if cfg.Out != "" {
		images, err := writePlots(cfg.Out, sc, rep)
		if err != nil {
			return err
		}
		planned := sc.Iterations
		if cfg.Iterations > 0 {
			planned = cfg.Iterations
		}
		if err := writeDashboard(cfg.Out, sc, rep, planned, images, time.Now()); err != nil {
			return err
		}
	}
	if cfg.JSON {
		ev.Emit("wall", map[string]any{"seconds": wall.Seconds()})
		return ev.Emit("done", doneFields(sc, rep))
	}
	writeTable(stdout, sc, rep)
	fmt.Fprintf(stdout, "\nwall time %.1f s", wall.Seconds())
	if cfg.Out != "" {
		fmt.Fprintf(stdout, "; open %s (plots beside it)", filepath.Join(cfg.Out, "index.html"))
	}
	fmt.Fprintln(stdout)
	return nil
}

func list(w io.Writer) error {
	fmt.Fprintln(w, "scenarios:")
	for _, name := range sim.BuiltinScenarios() {
		sc, err := sim.LoadScenario(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %-14s %s\n", name, sc.Description)
	}
	fmt.Fprintln(w, "device profiles (time of one lenet-caffe step at batch 64):")
	for _, p := range sim.Profiles() {
		fmt.Fprintf(w, "  %-10s %-6v %s\n", p.Name, p.RefStep, p.Source)
	}
	return nil
}

// progress shows the runs' progress: one line on a terminal, a JSON line
// per evaluation with --json, nothing otherwise. Runs report from several
// goroutines.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	ev    *cli.Events
	every int
	last  map[string]sim.Progress
	drawn time.Time
}

func newProgress(w io.Writer, ev *cli.Events, every int) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && cli.IsTerminal(f), ev: ev, every: every, last: map[string]sim.Progress{}}
}

func (p *progress) update(s sim.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[s.Run] = s
	if p.ev != nil && s.Iteration%p.every == 0 {
		p.ev.Emit("progress", map[string]any{"run": s.Run, "iteration": s.Iteration,
			"sim_seconds": s.SimSeconds, "test_accuracy": s.Accuracy})
	}
	if !p.tty || time.Since(p.drawn) < 200*time.Millisecond {
		return
	}
	p.drawn = time.Now()
	var parts []string
	for _, name := range sortedKeys(p.last) {
		l := p.last[name]
		acc := "  -  "
		if l.Accuracy >= 0 {
			acc = fmt.Sprintf("%.3f", l.Accuracy)
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d %.0fs %s", name, l.Iteration, l.Of, l.SimSeconds, acc))
	}
	fmt.Fprintf(p.w, "\r\033[K%s", strings.Join(parts, " | "))
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// writeTable prints the comparison and where each co-training run's time
// went.
func writeTable(w io.Writer, sc *sim.Scenario, rep *sim.Report) {
	target := fmt.Sprintf("to %.0f%% (s)", 100*sc.Target)
	if sc.Target == 0 {
		target = "to target (s)" // none set: the column stays empty
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	energyTarget := strings.Replace(strings.TrimSuffix(target, " (s)"), "to", "J to", 1)
	fmt.Fprintf(tw, "\nrun\t10 iterations (s)\tsamples/s\t%s\t%s\tJ\tbattery J\tmJ/sample\tbattery %%\tMB sent\tkB up/iter\tkB down/iter\tfinal accuracy\titerations\t\n", target, energyTarget)
	for _, r := range rep.Runs {
		up, down := perIter(r.GradBytesUp, r.Iterations), perIter(r.GradBytesDown, r.Iterations)
		if r.Policy == "solo" {
			up, down = "-", "-" // the hub is on the phone: nothing crosses the air
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%.0f\t%.0f\t%.1f\t%.2f\t%.1f\t%s\t%s\t%s\t%d\t\n", r.Name, secs(r.TenIterations), r.SamplesPerSecond(),
			secs(r.TimeToTarget), joules(r.EnergyToTarget), r.Energy, r.BatteryJoules(), 1e3*r.JoulesPerSample(), r.MaxBatteryPercent(),
			float64(r.Bytes)/1e6, up, down, pct(r.FinalAccuracy()), r.Iterations)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nenergy: every phone's, from the start of training (docs/energy.md); battery J: of the phones not on a charger; battery %%: the most any phone used of its own battery\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\tdevice\tsamples\tJ\tcompute J\tradio J\twaiting J\tmJ/sample\tbattery %%\t\n")
	for _, r := range rep.Runs {
		for _, d := range r.Devices {
			e := d.Energy
			per := "-"
			if d.Samples > 0 {
				per = fmt.Sprintf("%.1f", 1e3*e.Total()/float64(d.Samples))
			}
			bat := fmt.Sprintf("%.3f", e.BatteryPercent())
			if e.Charging {
				bat = "charging"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n", r.Name, d.Name, d.Samples, e.Total(),
				e.Compute, e.Radio, e.Wait, per, bat)
		}
	}
	tw.Flush()
	codec := sc.Compression
	if codec == "" {
		codec = "none"
	}
	comp := fmt.Sprintf("gradients compressed: %s", codec)
	if sc.Overlap {
		comp += ", layer by layer (overlap)"
	}
	paper := ""
	if slices.Contains(sc.Policies, "paper") {
		paper = " (but paper: uncompressed, one push after the backward pass, fixed shares)"
	}
	fmt.Fprintf(w, "\nco-training runs: %s%s; kB up/down per iteration are the frames of pushes and merged updates (every copy)\n", comp, paper)
	switch sc.Data {
	case "licenses":
		fmt.Fprintf(w, "\nnext-word accuracy on %d samples of the held-out licences, evaluated every %d iterations; times are simulated, from when every phone holds the model\n",
			sc.TestImages, sc.EvalEvery)
		for _, r := range rep.Runs {
			if n := len(r.Curve); n > 0 {
				fmt.Fprintf(w, "  %s: perplexity %.1f (e to the test loss %.3f)\n", r.Name, math.Exp(r.Curve[n-1].Loss), r.Curve[n-1].Loss)
			}
		}
	case "accel":
		fmt.Fprintf(w, "\naccuracy on %d held-out accelerometer windows (recordings of a seed no phone holds), evaluated every %d iterations; times are simulated, from when every phone holds the model\n",
			min(sc.TestImages, 440), sc.EvalEvery)
	default:
		fmt.Fprintf(w, "\naccuracy on %d %s test images, evaluated every %d iterations; times are simulated, from when every phone holds the model\n",
			sc.TestImages, map[string]string{"mnist": "MNIST"}[sc.Data]+map[string]string{"synthetic": "synthetic"}[sc.Data], sc.EvalEvery)
	}
	for _, r := range rep.Runs {
		if r.Policy == "solo" {
			continue
		}
		fmt.Fprintf(w, "\nwhere the time goes, %s (medium busy %.0f%% of the run with gradients):\n", r.Name, 100*r.MediumBusy)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "device\tsamples\tcompute\tsend\treceive\twait for air\tidle\t\n")
		for _, d := range r.Devices {
			tot := d.Compute + d.Send + d.Receive + d.AirWait + d.Idle
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", d.Name, d.Samples, share(d.Compute, tot), share(d.Send, tot),
				share(d.Receive, tot), share(d.AirWait, tot), share(d.Idle, tot))
		}
		tw.Flush()
		if r.Mismatches > 0 || r.Resynced > 0 {
			fmt.Fprintf(w, "  weights: %d hash mismatches, %d resynchronised to the hub's weights\n", r.Mismatches, r.Resynced)
		}
		for _, l := range r.Log {
			if strings.Contains(l, "worker-") || strings.Contains(l, "fault") || strings.Contains(l, "left") || strings.Contains(l, "resynchronised") {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
}

// perIter is bytes per iteration in kB, "-" for none.
func perIter(b int64, iters int) string {
	if b == 0 || iters == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(b)/float64(iters)/1e3)
}

// joules prints an energy, "-" for none (-1: the target was not reached).
func joules(j float64) string {
	if j < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", j)
}

func secs(s float64) string {
	if s <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", s)
}

func pct(a float64) string {
	if a < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*a)
}

func share(x, tot float64) string {
	if tot <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*x/tot)
}

// doneFields is the JSON done event: no wall-clock figure, so that the
// same seed gives the same line.
func doneFields(sc *sim.Scenario, rep *sim.Report) map[string]any {
	var runs []map[string]any
	for _, r := range rep.Runs {
		m := map[string]any{"name": r.Name, "policy": r.Policy, "iterations": r.Iterations, "samples": r.Samples,
			"sim_seconds_10_iterations": r.TenIterations, "samples_per_second": r.SamplesPerSecond(),
			"bytes": r.Bytes, "test_accuracy": r.FinalAccuracy(), "sim_seconds": r.End, "parks": r.Parks, "deadline_wait_seconds": r.DeadlineWait,
			"grad_bytes_up": r.GradBytesUp, "grad_bytes_down": r.GradBytesDown, "mismatches": r.Mismatches, "resynced": r.Resynced,
			"joules": r.Energy, "battery_joules": r.BatteryJoules(), "joules_per_sample": r.JoulesPerSample(), "max_battery_percent": r.MaxBatteryPercent()}
		if r.TimeToTarget >= 0 {
			m["sim_seconds_to_target"] = r.TimeToTarget
			m["joules_to_target"] = r.EnergyToTarget
		}
		runs = append(runs, m)
	}
	out := map[string]any{"scenario": sc.Name, "seed": sc.Seed, "policy": sc.Primary, "target": sc.Target, "runs": runs,
		"compression": sc.Compression, "overlap": sc.Overlap}
	if p := rep.Run(sc.Primary); p != nil {
		out["test_accuracy"] = p.FinalAccuracy()
		out["sim_seconds_10_iterations"] = p.TenIterations
		out["samples_per_second"] = p.SamplesPerSecond()
	}
	if f := rep.FastestSolo(); f != nil {
		out["fastest_solo"] = f.Solo
		out["fastest_solo_sim_seconds_10_iterations"] = f.TenIterations
	}
	return out
}

// writePlots writes accuracy.png and a timeline per co-training run.
func writePlots(dir string, sc *sim.Scenario, rep *sim.Report) (images []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	var series []chart.Series
	for _, r := range rep.Runs {
		s := chart.Series{Name: r.Name}
		for _, p := range r.Curve {
			s.X, s.Y = append(s.X, p.Seconds), append(s.Y, p.Accuracy)
		}
		series = append(series, s)
	}
	if err := chart.LinePlot(filepath.Join(dir, "accuracy.png"), sc.Name+": test accuracy",
		"simulated seconds", "test accuracy", series...); err != nil {
		return nil, err
	}
	images = append(images, "accuracy.png")
	// The same curves against the phones' energy: where a policy saves
	// joules for the same accuracy.
	series = series[:0]
	for _, r := range rep.Runs {
		s := chart.Series{Name: r.Name}
		for _, p := range r.Curve {
			s.X, s.Y = append(s.X, p.Joules/1e3), append(s.Y, p.Accuracy)
		}
		series = append(series, s)
	}
	if err := chart.LinePlot(filepath.Join(dir, "energy.png"), sc.Name+": test accuracy against energy",
		"kJ spent by the phones", "test accuracy", series...); err != nil {
		return nil, err
	}
	images = append(images, "energy.png")
	// The segments' kinds, drawn in the dashboard's colours: compute, and
	// communication's three parts in shades of its orange.
	kinds := []string{"compute", "send", "receive", "wait-air"}
	drawn := []chart.Kind{{Name: "compute", Color: chart.Compute}, {Name: "sending", Color: chart.Communication},
		{Name: "receiving", Color: chart.Receive}, {Name: "waiting for the air", Color: chart.AirWait}}
	for _, r := range rep.Runs {
		if r.Policy == "solo" {
			continue
		}
		rows := []string{"hub"}
		for _, d := range r.Devices {
			rows = append(rows, d.Name)
		}
		var spans []chart.Span
		for _, s := range r.Timeline {
			row, kind := index(rows, s.Device), index(kinds, s.Kind)
			if row >= 0 && kind >= 0 {
				spans = append(spans, chart.Span{Row: row, Kind: kind, Start: s.Start, End: s.End})
			}
		}
		name := "timeline-" + strings.ReplaceAll(r.Name, " ", "-") + ".png"
		if err := chart.TimelinePlot(filepath.Join(dir, name), fmt.Sprintf("%s, %s: the first %s", sc.Name, r.Name, timelineSpan(r)),
			"simulated seconds from the first compute", rows, drawn, "waiting at the barrier (idle)", spans); err != nil {
			return nil, err
		}
		images = append(images, name)
	}
	return images, nil
}

// timelineSpan says which iterations a run's recorded timeline covers:
// "10 iterations (1-10 of 640)".
func timelineSpan(r *sim.RunResult) string {
	lo, hi := -1, -1
	for _, s := range r.Timeline {
		if lo < 0 || s.Iteration < lo {
			lo = s.Iteration
		}
		hi = max(hi, s.Iteration)
	}
	if lo < 0 {
		return "iterations (none recorded)"
	}
	return fmt.Sprintf("%d iterations (%d-%d of %d)", hi-lo+1, lo+1, hi+1, r.Iterations)
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// Package experiment holds cotrain's experiment harnesses, out of the
// commands that start them: Adapt is cotrain adapt's comparison of the four
// ways to adapt a pretrained model, alone and on simulated phones
// (docs/adaptation.md). The harness runs each row in a child process of the
// running cotrain binary (cotrain adapt --row), so that each row's peak
// memory is its own.
package experiment

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/chart"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sim"
	"github.com/cotrain/cotrain/solver"
)

// AdaptConfig sizes the experiment (cotrain adapt's flags).
type AdaptConfig struct {
	// Out is the folder for the pretrained weights, results.json, table.md
	// and the plots.
	Out string
	// Tasks to run, comma-separated: lenet, mobilenet.
	Tasks string
	// Bandwidth of the shared Wi-Fi of the cooperative runs ("32Mbit").
	Bandwidth string
	// Row, when set, is the one row TASK:MODE:SETTING a child process runs.
	Row string
	// Compress is the gradient codec of the cooperative runs ("": cotrain's).
	Compress string
	// Pretrain, Train and Test are image counts: of the source task, of
	// the target task's training set spread over the phones, of its test
	// set; PretrainEpochs and Epochs the passes over them.
	Pretrain, Train, Test  int
	PretrainEpochs, Epochs int
	// Seed drives initialisation, data order and the simulation.
	Seed uint64
	// InProc runs every row in this process (no per-row peak memory).
	InProc bool
	// JSON prints one JSON line per row.
	JSON bool
}

// ErrUsage is wrapped by the errors that a wrong configuration causes
// (cotrain exits 2 for them).
var ErrUsage = errors.New("usage")

// Adapt runs the experiment c describes: every row of every task, each in
// a child process of this executable (cotrain adapt --row; InProc: here),
// then writes results.json, table.md and the plots to c.Out and the table
// to stdout. With c.Row set it runs that one row here and prints its JSON
// line, as the child processes do.
func Adapt(ctx context.Context, c AdaptConfig, stdout, stderr io.Writer) error {
	if c.Pretrain < 1 || c.Train < 3 || c.Test < 1 || c.Epochs < 1 || c.PretrainEpochs < 1 {
		return fmt.Errorf("%w: --pretrain, --train (at least 3: one per phone), --test and the epochs must be positive", ErrUsage)
	}
	if c.Row != "" {
		r, err := AdaptRow(ctx, c, c.Row)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(r)
	}
	var tasks []*adaptTask
	for _, name := range strings.Split(c.Tasks, ",") {
		t, err := lookupTask(name)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		tasks = append(tasks, t)
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return err
	}
	var rows []AdaptResult
	for _, t := range tasks {
		for _, spec := range t.rows() {
			r, err := runAdaptRow(ctx, c, spec, stderr)
			if err != nil {
				return fmt.Errorf("adapt %s: %w", spec, err)
			}
			rows = append(rows, r)
			if c.JSON {
				if err := json.NewEncoder(stdout).Encode(r); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(stderr, "%-28s accuracy %.4f  cpu %6.1f s  phone %7.1f s  rss %6.1f MiB  sent %s\n",
					spec, r.Accuracy, r.CPUSeconds, r.PhoneSeconds, r.PeakRSSMiB, bytesText(r.Bytes))
			}
		}
	}
	return writeAdaptReport(c, tasks, rows, stdout)
}

// AdaptResult is one row of the experiment.
type AdaptResult struct {
	Task, Mode, Setting string
	// Accuracy is on the target task's test images (on the source task's
	// for the pretraining row).
	Accuracy float64
	// Trainable is the number of parameters that learn.
	Trainable, Params int
	Iterations        int
	Samples           int
	// CPUSeconds is the user+system CPU time of the row's process (of the
	// row's work when run in-process), WallSeconds its wall time.
	CPUSeconds, WallSeconds float64
	// PhoneSeconds is the simulated time on the phones (sim), from the
	// first compute to the last merge.
	PhoneSeconds float64
	// PeakRSSMiB is the row's process peak resident memory (-1 in-process).
	PeakRSSMiB float64
	// Bytes crossed the simulated Wi-Fi, both ways.
	Bytes int64
	// Curve is accuracy against simulated phone seconds.
	Curve [][2]float64
	// FrozenIdentical is, for mode b, whether every weight but the last
	// layer's is bit-identical to the pretrained one; Changed counts the
	// weights that differ from the starting point.
	FrozenIdentical bool
	Changed         int
}

// runAdaptRow runs one row in a child process (so that its peak memory is
// its own) or, with --inproc, here.
func runAdaptRow(ctx context.Context, c AdaptConfig, spec string, stderr io.Writer) (AdaptResult, error) {
	if c.InProc {
		t0 := time.Now()
		cpu0 := cpuSeconds()
		r, err := AdaptRow(ctx, c, spec)
		r.CPUSeconds, r.WallSeconds, r.PeakRSSMiB = cpuSeconds()-cpu0, time.Since(t0).Seconds(), -1
		return r, err
	}
	exe, err := os.Executable()
	if err != nil {
		return AdaptResult{}, err
	}
	args := []string{"adapt", "--row", spec, "--out", c.Out, "--tasks", c.Tasks, "--bandwidth", c.Bandwidth, "--compress", c.Compress,
		"--pretrain", fmt.Sprint(c.Pretrain), "--pretrain-epochs", fmt.Sprint(c.PretrainEpochs),
		"--train", fmt.Sprint(c.Train), "--epochs", fmt.Sprint(c.Epochs), "--test", fmt.Sprint(c.Test),
		"--seed", fmt.Sprint(c.Seed)}
	cmd := exec.CommandContext(ctx, exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return AdaptResult{}, err
	}
	var r AdaptResult
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<24)
	var last string
	for sc.Scan() {
		last = sc.Text()
	}
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return AdaptResult{}, fmt.Errorf("row %s printed %q: %w", spec, last, err)
	}
	r.WallSeconds = time.Since(t0).Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPUSeconds = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
		r.PeakRSSMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return r, nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
}

func tvSeconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// adaptTask is a pretrained network and a user's task to adapt it to.
type adaptTask struct {
	Name, Model string
	Config      models.Config
	Source      string // what it is pretrained on
	Target      string // what it is adapted to
	LR          float64
	// split returns the source training and test sets and the target
	// training and test sets from MNIST.
	split func(c AdaptConfig, train, test data.Dataset) (srcTrain, srcTest, dstTrain, dstTest data.Dataset)
}

var adaptTasks = []*adaptTask{
	{
		Name: "lenet", Model: "lenet5", LR: 0.02,
		Source: "MNIST digits 0-4", Target: "MNIST digits 5-9 (new classes)",
		split: func(c AdaptConfig, train, test data.Dataset) (data.Dataset, data.Dataset, data.Dataset, data.Dataset) {
			lo, hi := []int{0, 1, 2, 3, 4}, []int{5, 6, 7, 8, 9}
			return first(data.FilterClasses(train, lo, false), c.Pretrain), first(data.FilterClasses(test, lo, false), c.Test),
				first(data.FilterClasses(train, hi, false), c.Train), first(data.FilterClasses(test, hi, false), c.Test)
		},
	},
	{
		Name: "mobilenet", Model: "mobilenet-small", LR: 0.05,
		Config: models.Config{Classes: 10, Input: solver.Shape{C: 1, H: 28, W: 28}, Width: 0.25},
		Source: "MNIST", Target: "contrast-inverted MNIST (every normalised pixel negated: a domain shift)",
		split: func(c AdaptConfig, train, test data.Dataset) (data.Dataset, data.Dataset, data.Dataset, data.Dataset) {
			// The target's training images are others than the source's.
			rest := data.Subset(train, seq(c.Pretrain, min(train.Len(), c.Pretrain+c.Train)))
			return first(train, c.Pretrain), first(test, c.Test), negated{rest}, negated{first(test, c.Test)}
		},
	},
}

func lookupTask(name string) (*adaptTask, error) {
	for _, t := range adaptTasks {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("--tasks: unknown task %q (lenet, mobilenet)", name)
}

// Modes: a inference only, b the last layer, c every layer from the
// pretrained weights, d every layer from scratch.
var adaptModes = []struct{ Key, Text string }{
	{"a", "inference only"}, {"b", "fine-tune last layer"}, {"c", "retrain all layers"}, {"d", "train from scratch"},
}

// rows lists the task's rows in order: pretraining, (a), then b, c and d
// alone and on 3 phones.
func (t *adaptTask) rows() []string {
	out := []string{t.Name + ":pretrain:alone", t.Name + ":a:alone"}
	for _, m := range []string{"b", "c", "d"} {
		out = append(out, t.Name+":"+m+":alone", t.Name+":"+m+":coop")
	}
	return out
}

// first returns ds's first n samples (all when it has fewer).
func first(ds data.Dataset, n int) data.Dataset {
	return data.Subset(ds, seq(0, min(n, ds.Len())))
}

func seq(from, to int) []int {
	out := make([]int, 0, max(0, to-from))
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// negated is a dataset whose inputs are its inner set's, negated: after
// MNIST's normalisation that is the contrast-inverted image (up to a
// constant offset), a shift of the input distribution that keeps labels.
type negated struct{ data.Dataset }

func (n negated) Get(i int, dst []float32) int32 {
	l := n.Dataset.Get(i, dst)
	c, h, w := n.Shape()
	for j := range dst[:c*h*w] {
		dst[j] = -dst[j]
	}
	return l
}

// pretrainedPath is where the task's pretrained weights are kept.
func (t *adaptTask) pretrainedPath(c AdaptConfig) string {
	return filepath.Join(c.Out, "pretrained-"+t.Name+".ctw")
}

// AdaptRow runs one row: TASK:MODE:SETTING.
func AdaptRow(ctx context.Context, c AdaptConfig, spec string) (AdaptResult, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return AdaptResult{}, fmt.Errorf("%w: --row %q: want TASK:MODE:SETTING", ErrUsage, spec)
	}
	t, err := lookupTask(parts[0])
	if err != nil {
		return AdaptResult{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	mode, setting := parts[1], parts[2]
	if !slices.Contains([]string{"pretrain", "a", "b", "c", "d"}, mode) || (setting != "alone" && setting != "coop") {
		return AdaptResult{}, fmt.Errorf("%w: --row %q: mode pretrain, a, b, c or d; setting alone or coop", ErrUsage, spec)
	}
	train, err := data.LoadMNIST("train", os.Getenv)
	if err != nil {
		return AdaptResult{}, err
	}
	test, err := data.LoadMNIST("test", os.Getenv)
	if err != nil {
		return AdaptResult{}, err
	}
	srcTrain, srcTest, dstTrain, dstTest := t.split(c, train, test)
	res := AdaptResult{Task: t.Name, Mode: mode, Setting: setting}
	switch mode {
	case "pretrain":
		return t.pretrain(ctx, c, srcTrain, srcTest, res)
	case "a":
		f, err := models.LoadFile(t.pretrainedPath(c))
		if err != nil {
			return res, fmt.Errorf("%w (the pretrain row writes it)", err)
		}
		net, err := f.Build(newCPU())
		if err != nil {
			return res, err
		}
		res.Params = net.NumParams()
		res.Accuracy, _ = solver.NewTrainer(net, nil, nil).Evaluate(dstTest, 250)
		res.FrozenIdentical = true // nothing trains
		return res, nil
	}
	return t.adapt(ctx, c, mode, setting, dstTrain, dstTest, res)
}

// pretrain trains the task's network on the source task alone (a plain
// trainer, no simulation) and saves it.
func (t *adaptTask) pretrain(ctx context.Context, c AdaptConfig, train, test data.Dataset, res AdaptResult) (AdaptResult, error) {
	b := newCPU()
	net, err := models.Build(b, t.Model, t.Config)
	if err != nil {
		return res, err
	}
	net.InitParams(rand.New(rand.NewPCG(c.Seed, 0x9e7)))
	opt := solver.NewSGD(b, net.NumParams(), 0.9, 0, false)
	const batch = 64
	total := c.PretrainEpochs * ((train.Len() + batch - 1) / batch)
	tr := solver.NewTrainer(net, opt, solver.Cosine{Base: float32(t.LR), Total: total})
	loader := data.NewLoader(train, batch, c.Seed, true)
	x := make([]float32, batch*net.In.Size())
	labels := make([]int32, batch)
	for it := 0; it < total; it++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n, _ := loader.Next(x, labels)
		if _, err := tr.Step(x[:n*net.In.Size()], labels[:n]); err != nil {
			return res, err
		}
		res.Samples += n
	}
	res.Iterations, res.Params, res.Trainable = total, net.NumParams(), net.NumParams()
	res.Accuracy, _ = tr.Evaluate(test, 250)
	f := models.Snapshot(t.Model, t.Config, net, nil)
	f.Meta = [][2]string{{"pretrained_on", t.Source}}
	return res, models.SaveFile(t.pretrainedPath(c), f)
}

// adapt runs mode b, c or d alone (one simulated phone with all the target
// data) or cooperatively (three phones, a shard each, over shared Wi-Fi).
func (t *adaptTask) adapt(ctx context.Context, c AdaptConfig, mode, setting string, train, test data.Dataset, res AdaptResult) (AdaptResult, error) {
	var start []float32
	var startState []float32
	if mode != "d" {
		f, err := models.LoadFile(t.pretrainedPath(c))
		if err != nil {
			return res, fmt.Errorf("%w (the pretrain row writes it)", err)
		}
		net, err := f.Build(newCPU())
		if err != nil {
			return res, err
		}
		start = make([]float32, net.NumParams())
		net.B.Download(start, net.Params)
		startState = make([]float32, net.State.Len())
		net.B.Download(startState, net.State)
	}
	const batch = 48 // 16 per phone cooperatively
	iters := c.Epochs * ((train.Len() + batch - 1) / batch)
	evalEvery := max(1, iters/6)
	policy := map[string]string{"alone": "solo", "coop": "fixed"}[setting]
	scText := fmt.Sprintf(`name adapt-%s-%s
seed %d
model %s
data mnist
batch %d
optimizer sgd lr=%g momentum=0.9
iterations %d
eval every=%d test=%d
policies solo fixed
primary fixed
network bandwidth=%s latency=2ms medium=shared
hub nexus-6p
device nexus-6p count=3
`, t.Name, mode, c.Seed, t.Model, batch, t.LR, iters, evalEvery, test.Len(), c.Bandwidth)
	if c.Compress != "" {
		scText += "compress " + c.Compress + "\n"
	}
	sc, err := sim.ParseScenario(strings.NewReader(scText))
	if err != nil {
		return res, err
	}
	var hubNet *solver.Net
	init := func(net *solver.Net) error {
		hubNet = net
		if start != nil {
			if len(start) != net.NumParams() || len(startState) != net.State.Len() {
				return fmt.Errorf("experiment: the pretrained file %s has %d parameters and %d state values, the network %d and %d",
					t.pretrainedPath(c), len(start), len(startState), net.NumParams(), net.State.Len())
			}
			net.B.Upload(net.Params, start)
			net.B.Upload(net.State, startState)
			net.ParamsChanged()
		}
		if mode == "b" {
			net.FreezeAllButLast(1)
		}
		return nil
	}
	rep, err := sim.Run(ctx, sc, &sim.Data{Train: train, Test: test}, sim.Options{Policies: []string{policy}, ModelConfig: t.Config, Init: init, Parallel: 1})
	if err != nil {
		return res, err
	}
	if len(rep.Runs) != 1 {
		return res, fmt.Errorf("the simulation made %d runs, want 1", len(rep.Runs))
	}
	run := rep.Runs[0]
	res.Accuracy, res.Iterations, res.Samples = run.FinalAccuracy(), run.Iterations, run.Samples
	res.PhoneSeconds, res.Bytes = run.End, run.Bytes
	for _, p := range run.Curve {
		res.Curve = append(res.Curve, [2]float64{p.Seconds, p.Accuracy})
	}
	res.Params, res.Trainable = hubNet.NumParams(), hubNet.NumTrainable()
	final := make([]float32, hubNet.NumParams())
	hubNet.B.Download(final, hubNet.Params)
	if start != nil {
		for i := range final {
			if final[i] != start[i] {
				res.Changed++
			}
		}
		// Outside the trainable ranges nothing may have moved.
		learns := make([]bool, len(final))
		for _, rg := range hubNet.Trainable() {
			for i := rg.Off; i < rg.Off+rg.Len; i++ {
				learns[i] = true
			}
		}
		res.FrozenIdentical = true
		for i := range final {
			if !learns[i] && final[i] != start[i] {
				res.FrozenIdentical = false
				break
			}
		}
	} else {
		res.Changed = len(final)
	}
	return res, nil
}

// bytesText formats a byte count for the table.
func bytesText(n int64) string {
	switch {
	case n == 0:
		return "0"
	case n < 1<<20:
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// newCPU is the backend of the experiment: the CPU, as on a phone without
// OpenCL, so that rows compare.
func newCPU() gpu.Backend { return cpu.NewCPU() }

// writeAdaptReport writes results.json, table.md and one plot per task.
func writeAdaptReport(c AdaptConfig, tasks []*adaptTask, rows []AdaptResult, stdout io.Writer) error {
	raw, err := json.MarshalIndent(rows, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Out, "results.json"), append(raw, '\n'), 0o644); err != nil {
		return err
	}
	var tb strings.Builder
	fmt.Fprintf(&tb, "| task | mode | setting | test accuracy | trainable params | CPU s here | phone s (sim) | peak RSS MiB | bytes sent |\n")
	fmt.Fprintf(&tb, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	modeText := map[string]string{"pretrain": "pretraining (source task)"}
	for _, m := range adaptModes {
		modeText[m.Key] = m.Key + ") " + m.Text
	}
	for _, r := range rows {
		setting := map[string]string{"alone": "1 phone", "coop": "3 phones"}[r.Setting]
		if r.Mode == "a" || r.Mode == "pretrain" {
			setting = "—"
		}
		phone, rss := fmt.Sprintf("%.1f", r.PhoneSeconds), fmt.Sprintf("%.0f", r.PeakRSSMiB)
		if r.Mode == "a" || r.Mode == "pretrain" {
			phone = "—"
		}
		if r.PeakRSSMiB < 0 {
			rss = "—"
		}
		fmt.Fprintf(&tb, "| %s | %s | %s | %.4f | %d | %.1f | %s | %s | %s |\n", r.Task, modeText[r.Mode], setting,
			r.Accuracy, r.Trainable, r.CPUSeconds, phone, rss, bytesText(r.Bytes))
	}
	if err := os.WriteFile(filepath.Join(c.Out, "table.md"), []byte(tb.String()), 0o644); err != nil {
		return err
	}
	for _, t := range tasks {
		var series []chart.Series
		for _, r := range rows {
			if r.Task != t.Name || len(r.Curve) == 0 {
				continue
			}
			s := chart.Series{Name: fmt.Sprintf("%s, %s", r.Mode, map[string]string{"alone": "1 phone", "coop": "3 phones"}[r.Setting])}
			for _, p := range r.Curve {
				s.X, s.Y = append(s.X, p[0]), append(s.Y, p[1])
			}
			series = append(series, s)
		}
		path := filepath.Join(c.Out, "adapt-"+t.Name+".png")
		title := fmt.Sprintf("%s: %s to %s", t.Model, t.Source, strings.SplitN(t.Target, " (", 2)[0])
		if err := chart.LinePlot(path, title, "simulated phone seconds", "test accuracy", series...); err != nil {
			return err
		}
	}
	if !c.JSON {
		fmt.Fprint(stdout, tb.String())
	}
	return nil
}

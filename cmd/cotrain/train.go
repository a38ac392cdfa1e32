package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/chart"
	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/hub/runspec"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// trainConfig is what train and finetune take.
type trainConfig struct {
	model, weights, dataSpec, classes, out, optimizer, schedule, trainLast, device, memoryBudget string
	normalize                                                                                    string
	epochs, iterations, batch, stepEvery, evalBatch                                              int
	lr, momentum, weightDecay, gamma, width, holdout                                             float64
	nesterov, json                                                                               bool
	seed                                                                                         uint64
	// checkpointEvery and resume: checkpoint.go.
	checkpointEvery int
	resume          bool
	maxPixels       int    // --max-pixels
	cachePrefix     string // --cache-prefix (finetune)
	window, stride  int    // --window, --stride (sensor data)
	vocab           string // --vocab (text)
	context         int    // --context (text)
	// autoLength: finetune without --epochs or --iterations (runTrain).
	autoLength bool
}

// minFinetuneSteps is the fewest steps `cotrain finetune` takes when no
// --epochs or --iterations says otherwise: enough for a new last layer to
// learn a small folder's classes (a few dozen photos give one or two steps
// an epoch).
const minFinetuneSteps = 100

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer, finetune bool) error {
	var c trainConfig
	name, synopsis := "train", "cotrain train --model NAME --data mnist|DIR [flags]"
	about := "Trains a built-in model from scratch on this device and writes its weights, with the class names, to --out."
	defLR := 0.05
	if finetune {
		name, synopsis, defLR = "finetune", "cotrain finetune --weights FILE --data mnist|DIR --train-last N|all [flags]", 0.01
		about = "Fine-tunes a trained model (a cotrain weight file or an ONNX export) on new data on this device; a last layer that does not fit the data's classes is replaced."
	}
	fs := newFlags(name, stderr, synopsis, about)
	if finetune {
		fs.StringVar(&c.weights, "weights", "", "weight file or ONNX model (.onnx, imported as cotrain import does) to start from (required); "+
			"when its last layer does not fit the data's classes, it is replaced by a new one")
		fs.StringVar(&c.trainLast, "train-last", cli.TrainLastDefault, cli.TrainLastUsage)
		fs.StringVar(&c.normalize, "normalize", "", cli.WeightsNormUsage)
		fs.StringVar(&c.cachePrefix, "cache-prefix", cli.CachePrefixDefault, cli.CachePrefixUsage)
	} else {
		fs.StringVar(&c.model, "model", "lenet5", "model: "+fmt.Sprint(models.Names())+"; its head is sized to the data's classes")
		fs.StringVar(&c.normalize, "normalize", "", models.NormUsage)
		fs.Float64Var(&c.width, "width", 0, "width multiplier α of mobilenet-v1 and mobilenet-small (0: the model's default)")
	}
	fs.StringVar(&c.dataSpec, "data", "mnist", cli.DataUsage)
	fs.IntVar(&c.window, "window", 0, cli.WindowUsage)
	fs.IntVar(&c.stride, "stride", 0, cli.StrideUsage)
	fs.IntVar(&c.maxPixels, "max-pixels", data.DefaultMaxPixels, cli.MaxPixelsUsage)
	fs.StringVar(&c.vocab, "vocab", "", cli.VocabUsage)
	if !finetune {
		fs.IntVar(&c.context, "context", 0, cli.ContextUsage)
	}
	fs.StringVar(&c.classes, "classes", "", `train and test only on these labels, e.g. "0-4" or "5,7"`)
	fs.Float64Var(&c.holdout, "holdout", 0.1, "fraction of a single image or recording folder (or WISDM file) held out to test, drawn by --seed (0: none; test figures are then on the training images); "+
		"MNIST, IDX files and a folder with train/ and test/ come split. The split is printed and stored in the weight file")
	epochsUsage, batchUsage := "passes over the training data", "mini-batch size"
	if finetune {
		epochsUsage = fmt.Sprintf("passes over the training data (default: 1, but at least %d steps)", minFinetuneSteps)
		batchUsage = "mini-batch size (at most the number of training images)"
	}
	fs.IntVar(&c.epochs, "epochs", 1, epochsUsage)
	fs.IntVar(&c.iterations, "iterations", 0, "stop after this many steps instead (0: use --epochs)")
	fs.IntVar(&c.batch, "batch", 64, batchUsage)
	fs.StringVar(&c.optimizer, "optimizer", "sgd", "sgd or adam")
	fs.Float64Var(&c.lr, "lr", defLR, "learning rate")
	fs.Float64Var(&c.momentum, "momentum", 0.9, "SGD momentum")
	fs.BoolVar(&c.nesterov, "nesterov", false, "Nesterov momentum")
	fs.Float64Var(&c.weightDecay, "weight-decay", 0, "L2 weight decay")
	fs.StringVar(&c.schedule, "schedule", "cosine", "learning-rate schedule: cosine, step or constant")
	fs.IntVar(&c.stepEvery, "step-every", 0, "step schedule: multiply by --gamma every N iterations (0: every epoch)")
	fs.Float64Var(&c.gamma, "gamma", 0.1, "step schedule factor")
	fs.IntVar(&c.evalBatch, "eval-batch", 500, "batch size for evaluation")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for initialisation, shuffling and dropout")
	fs.StringVar(&c.out, "out", "cotrain-out", "folder for the weight file and plots")
	fs.BoolVar(&c.json, "json", false, "print JSON lines instead of progress")
	fs.StringVar(&c.device, "device", "auto", deviceUsage)
	fs.StringVar(&c.memoryBudget, "memory-budget", "", cli.MemoryBudgetUsage)
	fs.IntVar(&c.checkpointEvery, "checkpoint-every", 500, "save a checkpoint to --out every N steps, and on Ctrl-C or SIGTERM (0: only then)")
	fs.BoolVar(&c.resume, "resume", false, "continue the interrupted run in --out from its checkpoint (same flags); it ends with the bits of an uninterrupted run")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// finetune's length, when neither --epochs nor --iterations is given, is
	// one epoch of at least minFinetuneSteps steps: one epoch of a folder of
	// 36 photos would be a single step.
	c.autoLength = finetune && !set["epochs"] && !set["iterations"]
	if finetune && c.weights == "" {
		return fmt.Errorf("%w: finetune needs --weights", errUsage)
	}
	if finetune {
		if err := cli.CheckTrainLast(c.trainLast); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if err := cli.CheckFlags(
		cli.FlagRule{Flag: "--batch", Value: c.batch, OK: c.batch >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--max-pixels", Value: c.maxPixels, OK: c.maxPixels >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--eval-batch", Value: c.evalBatch, OK: c.evalBatch >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--lr", Value: c.lr, OK: c.lr > 0, Want: "more than 0"},
		cli.FlagRule{Flag: "--epochs", Value: c.epochs, OK: c.epochs >= 1 || c.iterations >= 1, Want: "at least 1 (or --iterations at least 1)"},
	); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if c.checkpointEvery < 0 {
		return fmt.Errorf("%w: --checkpoint-every %d: want 0 (only on interrupt) or more", errUsage, c.checkpointEvery)
	}
	if _, err := cli.ParseBytes(c.cachePrefix); err != nil {
		return fmt.Errorf("%w: --cache-prefix: %v", errUsage, err)
	}
	return train(ctx, c, stdout, stderr)
}

func train(ctx context.Context, c trainConfig, stdout, stderr io.Writer) error {
	b, release, err := openDevice(c.device, stderr)
	if err != nil {
		return err
	}
	defer release()
	classes, err := cli.ParseClasses(c.classes)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	setup, err := cli.PrepareModel(cli.ModelFlags{Weights: c.weights, Model: c.model, Normalize: c.normalize,
		TrainLast: c.trainLast, Width: c.width, Data: c.dataSpec, Holdout: c.holdout, Classes: classes, Seed: c.seed, MaxPixels: c.maxPixels,
		Window: c.window, Stride: c.stride, Vocab: c.vocab, Context: c.context}, b, stderr)
	if err != nil {
		return err
	}
	var (
		file  = setup.File
		net   = setup.Net
		norm  = setup.Norm
		ds    = setup.Data
		model = file.Model
		mcfg  = file.Config
	)
	drop := rand.NewPCG(c.seed, 0xd40)
	net.SetRand(rand.New(drop))
	cacheBytes, _ := cli.ParseBytes(c.cachePrefix) // checked by runTrain
	net.SetPrefixCache(int(min(cacheBytes, math.MaxInt)))

	if c.batch > ds.Train.Len() {
		// A batch larger than the training set would repeat images within
		// a step; the loader serves at most the set.
		c.batch = ds.Train.Len()
	}
	perEpoch := (ds.Train.Len() + c.batch - 1) / c.batch
	total := c.iterations
	if total == 0 {
		total = c.epochs * perEpoch
	}
	if c.autoLength {
		total = max(total, minFinetuneSteps)
	}
	// The trainer from the run's spec (runspec), as cmd/hub and the
	// simulator build theirs.
	spec := runspec.Default()
	spec.Optimizer = runspec.Optimizer{Name: c.optimizer, LR: c.lr, Momentum: c.momentum, WeightDecay: c.weightDecay, Nesterov: c.nesterov}
	spec.Schedule = runspec.Schedule{Name: c.schedule, StepEvery: c.stepEvery, Gamma: c.gamma}
	if spec.Schedule.StepEvery == 0 {
		spec.Schedule.StepEvery = perEpoch
	}
	spec.Stop.Iterations = uint64(total)
	tr, err := spec.Trainer(b, net)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	plan, budget, err := fitBudget(b, net, tr.Opt, c.memoryBudget, c.batch)
	if err != nil {
		return err
	}

	var ev *cli.Events
	var bar *cli.Progress
	if c.json {
		ev = cli.NewEvents(stdout)
	} else {
		fmt.Fprintf(stderr, "%s: %d parameters (%d trainable), %d training and %d test samples, %s of %d\n",
			file.DisplayName(), net.NumParams(), net.NumTrainable(), ds.Train.Len(), ds.Test.Len(), plural(total, "step"), c.batch)
		fmt.Fprintf(stderr, "data %s: %s\n", c.dataSpec, ds.Split)
		if budget > 0 {
			fmt.Fprintf(stderr, "memory budget %s: %s\n", solver.FormatBytes(budget), cli.DescribeMemory(plan))
		}
		if f, ok := stderr.(*os.File); ok && cli.IsTerminal(f) {
			bar = cli.NewProgress(stderr, "train", total*c.batch, ds.Kind.Unit())
		}
	}
	ev.Emit("start", map[string]any{"model": file.DisplayName(), "params": net.NumParams(), "trainable": net.NumTrainable(),
		"train_samples": ds.Train.Len(), "test_samples": ds.Test.Len(), "split": ds.Split, "holdout": ds.Holdout,
		"iterations": total, "batch": c.batch, "memory_budget": budget, "memory_estimate": plan.Total, "replayed_layers": plan.Replayed})

	loader := data.NewLoader(ds.Train, c.batch, c.seed, true)
	x := make([]float32, c.batch*net.In.Size())
	labels := make([]int32, c.batch)
	ids := make([]int64, c.batch) // the samples' identities, for the prefix cache
	epochStart, epochIt, epochSamples := time.Now(), tr.Iter, 0
	var curve chart.Series
	curve.Name = "training loss"
	var smooth float64
	ck, err := newCheckpointer(c, model, mcfg, tr, loader, drop, total, ds.Train.Len())
	if err != nil {
		return err
	}
	if c.resume {
		var warn string
		if smooth, curve.Y, warn, err = ck.restore(total); err != nil {
			return err
		}
		if warn != "" {
			fmt.Fprintln(stderr, "cotrain:", warn)
		}
		for i := tr.Iter - len(curve.Y); i < tr.Iter; i++ {
			curve.X = append(curve.X, float64(i+1))
		}
		ev.Emit("resume", map[string]any{"iteration": tr.Iter, "epoch": loader.Epoch(), "pos": loader.Pos(), "checkpoint": ck.path()})
		if !c.json {
			fmt.Fprintf(stderr, "resuming at step %d (epoch %d, sample %d) from %s\n", tr.Iter, loader.Epoch(), loader.Pos(), ck.path())
		}
		bar.Add(tr.Iter*c.batch, "")
	}
	start, first := time.Now(), tr.Iter
	for it := tr.Iter; it < total; it++ {
		if ctx.Err() != nil {
			if err := ck.save(smooth, curve.Y); err != nil {
				return fmt.Errorf("interrupted at step %d, and the checkpoint failed: %w", it, err)
			}
			bar.Done()
			e := interrupted(ctx, it, ck.path())
			ev.Emit("interrupted", map[string]any{"iteration": it, "checkpoint": ck.path()})
			return e
		}
		n, epochDone := loader.NextIDs(x, labels, ids)
		loss, err := tr.StepIDs(x[:n*net.In.Size()], labels[:n], ids[:n])
		if err != nil {
			return err
		}
		if epochSamples += n; epochDone {
			// Each epoch's own rate: the prefix cache makes the later
			// ones faster than the first.
			st := net.PrefixCache()
			rate := float64(epochSamples) / time.Since(epochStart).Seconds()
			ev.Emit("epoch", map[string]any{"epoch": loader.Epoch(), "iteration": it + 1, "steps": it + 1 - epochIt,
				"samples_per_sec": rate, "cached_samples": st.Samples, "cached_bytes": st.Bytes, "cache_hits": st.Hits})
			epochStart, epochIt, epochSamples = time.Now(), it+1, 0
		}
		if it == 0 {
			smooth = loss
		}
		smooth = 0.95*smooth + 0.05*loss
		curve.X = append(curve.X, float64(it+1))
		curve.Y = append(curve.Y, loss)
		bar.Add(n, fmt.Sprintf("loss %.4f", smooth))
		if (it+1)%100 == 0 || it+1 == total {
			ev.Emit("progress", map[string]any{"iteration": it + 1, "epoch": loader.Epoch(), "loss": smooth,
				"lr": tr.LR(), "samples_per_sec": float64((it+1-first)*c.batch) / time.Since(start).Seconds()})
		}
		if c.checkpointEvery > 0 && (it+1)%c.checkpointEvery == 0 && it+1 < total {
			if err := ck.save(smooth, curve.Y); err != nil {
				return err
			}
			ev.Emit("checkpoint", map[string]any{"iteration": it + 1, "checkpoint": ck.path()})
		}
	}
	bar.Done()
	elapsed := time.Since(start)
	acc, testLoss := tr.Evaluate(ds.Test, c.evalBatch)
	var ppl cli.Perplexity
	if ds.Kind == cli.KindText {
		if ppl, err = cli.EvalText(tr, ds.Test, c.evalBatch); err != nil {
			return err
		}
	}

	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	f := models.Snapshot(model, mcfg, net, tr.Opt)
	f.Meta = [][2]string{{"iterations", strconv.Itoa(tr.Iter)}, {"epoch", strconv.Itoa(loader.Epoch())},
		{"data", c.dataSpec}, {"seed", strconv.FormatUint(c.seed, 10)},
		// The split travels with the weights: a test figure quoted later
		// says what it was measured on.
		{"split", ds.Split}, {"holdout", strconv.FormatFloat(ds.Holdout, 'g', -1, 64)},
		{"test_samples", strconv.Itoa(ds.Test.Len())}}
	if file != nil {
		f.Meta = carryMeta(f.Meta, file.Meta)
	}
	// The model's classes and normalisation travel with it, so that eval
	// and predict use it correctly without flags.
	f.Meta = ds.ModelMeta(f.Meta, norm)
	path := filepath.Join(c.out, "weights.ctw")
	if err := models.SaveFile(path, f); err != nil {
		return err
	}
	sum, err := cli.FileSHA256(path)
	if err != nil {
		return err
	}
	plotPath := filepath.Join(c.out, "loss.png")
	if err := chart.LinePlot(plotPath, model+" training loss", "iteration", "loss", curve); err != nil {
		return err
	}
	ck.remove()
	result := map[string]any{"test_accuracy": acc, "test_loss": testLoss, "test_samples": ds.Test.Len(), "split": ds.Split, "iterations": tr.Iter,
		"seconds": elapsed.Seconds(), "samples_per_sec": float64((tr.Iter-first)*c.batch) / elapsed.Seconds(),
		"weights": path, "weights_sha256": sum, "loss_plot": plotPath}
	if ds.Kind == cli.KindText {
		result["test_perplexity"], result["unigram_perplexity"] = ppl.Perplexity, ppl.Unigram
	}
	if c.json {
		return ev.Emit("done", result)
	}
	if ds.Kind == cli.KindText {
		fmt.Fprintf(stdout, "test perplexity %.2f (the best unigram model of the same words: %.2f), next-word accuracy %.4f on %d test samples\n",
			ppl.Perplexity, ppl.Unigram, acc, ds.Test.Len())
	}
	fmt.Fprintf(stdout, "test accuracy %.4f, test loss %.4f on %d test samples after %s in %.1fs (%.0f %s/s)\nweights %s (sha256 %s)\nloss curve %s\n",
		acc, testLoss, ds.Test.Len(), plural(tr.Iter, "step"), elapsed.Seconds(), result["samples_per_sec"], ds.Kind.Unit(), path, sum, plotPath)
	return nil
}

// plural writes n and the noun, with an s unless n is 1: "1 step", "100 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// carryMeta appends to meta the entries of the fine-tuned file's meta whose
// keys meta does not set: above all an imported model's graph
// (models.MetaGraph), without which the new file could not be built, and
// its import notes.
func carryMeta(meta, from [][2]string) [][2]string {
	set := map[string]bool{}
	for _, kv := range meta {
		set[kv[0]] = true
	}
	for _, kv := range from {
		if !set[kv[0]] {
			meta = append(meta, kv)
		}
	}
	return meta
}

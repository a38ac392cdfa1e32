// Command hub coordinates a cooperative training run: workers register with
// it, push gradients, and it merges them behind a per-iteration barrier and
// broadcasts the merged update. It advertises itself over mDNS.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/sync/compress"
	"github.com/cotrain/cotrain/watch/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err == nil {
		err = run(ctx, cfg, os.Stdout, os.Stderr)
	}
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, cli.ErrVersion):
		fmt.Println(cli.Version("hub"))
	case errors.Is(err, context.Canceled):
		// Stopped by a signal after saying goodbye and saving: not a failure.
	default:
		fmt.Fprintln(os.Stderr, "hub:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = cli.ErrUsage

// config is everything the hub's flags set.
type config struct {
	model, dataSpec, out, session, optimizer, schedule, policy, identity, psk string
	weights, trainLast, normalize                                             string
	allow, compress                                                           string
	overlap, park                                                             bool
	parkMargin, batteryFloor, energySlack                                     float64
	parkProbe                                                                 int
	checkpointEvery                                                           int
	resume                                                                    bool
	listen                                                                    []string
	minWorkers, maxWorkers, batch, epochs, patience, evalEvery, logEvery      int
	maxMisses                                                                 int
	iterations                                                                uint64
	lr, momentum, weightDecay, width                                          float64
	nesterov, json, mdns, verbose                                             bool
	http                                                                      string
	seed                                                                      uint64
	maxPixels                                                                 int    // --max-pixels
	window, stride                                                            int    // --window, --stride (sensor data)
	vocab                                                                     string // --vocab (text)
	context                                                                   int    // --context (text)
	deadline, tick                                                            time.Duration
	// deadlineFactor and deadlineFloor: the measured deadline (hub/deadline.go).
	deadlineFactor float64
	deadlineFloor  time.Duration
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	cli.SetUsage(fs, stderr, "hub --model lenet5|--weights FILE|MODEL.onnx [--train-last N|all] --data mnist|DIR --min-workers 2 --batch 192 --iterations 300 [--listen MULTIADDR] [--out DIR] [--json] [--http 127.0.0.1:8080]",
		"Coordinates a cooperative training run: workers register with it, push gradients, and it merges them behind a per-iteration barrier, "+
			"broadcasts the merged update, evaluates the model on --data and advertises itself over mDNS.")
	def, ddef := hub.DefaultConfig(), hub.DefaultDriverConfig()
	fs.StringVar(&c.model, "model", "lenet5", "built-in model trained from scratch: "+fmt.Sprint(models.Names())+"; its head is sized to the data's classes")
	fs.StringVar(&c.weights, "weights", "", "fine-tune this model instead of --model: a cotrain weight file or an ONNX model (.onnx, imported as cotrain import does); "+
		"when its last layer does not fit the data's classes it is replaced by a new one")
	fs.StringVar(&c.trainLast, "train-last", cli.TrainLastDefault, "with --weights: "+cli.TrainLastUsage)
	fs.StringVar(&c.normalize, "normalize", "", cli.WeightsNormUsage)
	fs.IntVar(&c.maxPixels, "max-pixels", data.DefaultMaxPixels, cli.MaxPixelsUsage)
	fs.Float64Var(&c.width, "width", 0, "with --model mobilenet-v1 or mobilenet-small: the width multiplier α (0: the model's default)")
	fs.StringVar(&c.dataSpec, "data", "mnist", "the hub's evaluation data: \"mnist\" (its test set), a folder with train/ and test/ (test/), an image folder (all of it), "+
		"a folder of sensor recordings (one subfolder of CSV files per activity; all of it), UCI HAR's folder (its test split) or a WISDM file (all of it); "+
		"its classes (the sorted subfolder names) are the model's, and workers whose data has other classes are refused (workers bring the training data); "+
		"a new model of sensor windows takes its channels, window and normalisation from it, and sends them to the workers; "+
		"text (a .txt file or a folder of them): a language model's held-out text, its vocabulary built from it unless --vocab gives one, and sent to the workers")
	fs.StringVar(&c.vocab, "vocab", "", cli.VocabUsage+"; the hub sends it to every worker with the model")
	fs.IntVar(&c.context, "context", 0, cli.ContextUsage)
	fs.IntVar(&c.window, "window", 0, cli.WindowUsage)
	fs.IntVar(&c.stride, "stride", 0, cli.StrideUsage)
	fs.IntVar(&c.minWorkers, "min-workers", def.MinWorkers, "workers that must register before training starts")
	fs.IntVar(&c.maxWorkers, "max-workers", def.MaxWorkers, "most workers at once")
	fs.IntVar(&c.batch, "batch", 192, "global batch: samples per iteration, split between the workers")
	fs.Uint64Var(&c.iterations, "iterations", 300, "stop after this many iterations (0: use --epochs or --patience)")
	fs.IntVar(&c.epochs, "epochs", 0, "stop after this many passes over the training set (overrides --iterations)")
	fs.IntVar(&c.patience, "patience", 0, "stop when the held-out loss has not improved for this many evaluations (0: off)")
	fs.IntVar(&c.evalEvery, "eval-every", 50, "iterations between held-out evaluations")
	fs.IntVar(&c.logEvery, "log-every", 10, "iterations between progress lines")
	fs.Var((*cli.ListFlag)(&c.listen), "listen", "multiaddr to listen on (repeatable; default TCP and QUIC on every IPv4 interface)")
	fs.StringVar(&c.out, "out", "cotrain-hub", "folder for the final weights")
	fs.StringVar(&c.session, "session", "cotrain", "session name advertised over mDNS")
	fs.BoolVar(&c.mdns, "mdns", true, "advertise the hub over mDNS")
	fs.StringVar(&c.identity, "identity", "", "libp2p key file (created if missing); empty: "+identityName+" in --out, so a restarted hub keeps its peer id")
	fs.StringVar(&c.psk, "psk", "", "swarm.key file (cotrain keygen writes one): only peers with the same key can connect")
	fs.StringVar(&c.allow, "allow", "", "file of worker peer ids allowed to join, one per line (# comments); empty: any peer that can connect")
	fs.IntVar(&c.checkpointEvery, "checkpoint-every", 50, "iterations between checkpoints ("+checkpointName+" in --out; also written on exit); 0: only on exit")
	fs.BoolVar(&c.resume, "resume", false, "continue from the checkpoint in --out")
	fs.StringVar(&c.optimizer, "optimizer", "adam", "adam or sgd (with --compress topk the default is sgd, with momentum correction)")
	fs.Float64Var(&c.lr, "lr", 0, "learning rate (default: 0.004 with adam, 0.05 with sgd)")
	fs.Float64Var(&c.momentum, "momentum", 0.9, "SGD momentum")
	fs.BoolVar(&c.nesterov, "nesterov", false, "Nesterov momentum")
	fs.Float64Var(&c.weightDecay, "weight-decay", 0, "L2 weight decay")
	fs.StringVar(&c.schedule, "schedule", "cosine", "learning-rate schedule: cosine or constant")
	fs.StringVar(&c.compress, "compress", "", "gradient codec of pushes and merged updates: none, fp16, int8 or topk[:FRACTION] (workers learn it from the hub); default: fp16 with adam, topk:0.01 with sgd")
	fs.BoolVar(&c.overlap, "overlap", def.Overlap, "push and merge the gradient layer by layer, so that transfers overlap the backward pass")
	fs.StringVar(&c.policy, "policy", "adaptive", "batch split: adaptive (by measured throughput), fixed (equal) or energy (the phones whose samples cost their battery least first, within --energy-slack; weighs the power workers declare with --compute-watts, adaptive without)")
	fs.Float64Var(&c.energySlack, "energy-slack", def.EnergySlack, "with --policy energy: how many times the adaptive split's iteration time an iteration may take (at least 1)")
	fs.BoolVar(&c.park, "park", true, "with --policy adaptive, park a worker whose contribution does not pay for its communication (it says so, and is probed again now and then)")
	fs.Float64Var(&c.parkMargin, "park-margin", 0.1, "parking hysteresis: park or take back only for a predicted gain above this fraction")
	fs.IntVar(&c.parkProbe, "park-probe", def.ParkProbe, "iterations a worker stays parked before one batch measures it again (0: never)")
	fs.Float64Var(&c.batteryFloor, "battery-floor", 0, "park a worker whose battery (as it reports it) is discharging below this percentage, under any --policy; it gets a batch again once it reports charging or a level at the floor (0: off)")
	fs.DurationVar(&c.deadline, "deadline", ddef.Deadline, "barrier deadline, the upper bound: workers that have not pushed by then are marked late")
	fs.Float64Var(&c.deadlineFactor, "deadline-factor", def.DeadlineFactor, "measure the deadline: this many times the slowest worker's recent iteration time, within --deadline-floor and --deadline (0: always --deadline)")
	fs.DurationVar(&c.deadlineFloor, "deadline-floor", ddef.DeadlineFloor, "the least measured deadline")
	fs.DurationVar(&c.tick, "tick", ddef.Tick, "the hub's clock resolution")
	fs.IntVar(&c.maxMisses, "max-misses", def.MaxMisses, "deadlines in a row a worker may miss before it is dropped (0: never)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for the initial weights")
	fs.BoolVar(&c.json, "json", false, "print JSON lines instead of progress: every event with its time, progress every --log-every iterations (docs/dashboard.md)")
	fs.StringVar(&c.http, "http", "", "serve the live dashboard, /api/status, /api/events and /metrics on this address (e.g. 127.0.0.1:8080; :8080 exposes them to the LAN, read-only, without authentication: docs/dashboard.md); empty: off")
	fs.BoolVar(&c.verbose, "v", false, "log every merge")
	version := cli.VersionFlag(fs)
	if err := cli.ParseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if *version {
		return c, cli.ErrVersion
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.weights != "" && set["model"] {
		return c, fmt.Errorf("%w: give --model (a built-in model from scratch) or --weights (a model to fine-tune), not both", errUsage)
	}
	if c.weights == "" && set["train-last"] {
		return c, fmt.Errorf("%w: --train-last needs --weights (a built-in --model trains all its layers)", errUsage)
	}
	if err := cli.CheckTrainLast(c.trainLast); err != nil {
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := c.resolveOptimizer(fs, stderr); err != nil {
		return c, err
	}
	if err := cli.CheckFlags(
		cli.FlagRule{Flag: "--batch", Value: c.batch, OK: c.batch >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--max-pixels", Value: c.maxPixels, OK: c.maxPixels >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--min-workers", Value: c.minWorkers, OK: c.minWorkers >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--lr", Value: c.lr, OK: c.lr > 0, Want: "more than 0"},
		cli.FlagRule{Flag: "--tick", Value: c.tick, OK: c.tick > 0, Want: "more than 0"},
		cli.FlagRule{Flag: "--deadline", Value: c.deadline, OK: c.deadline >= c.tick, Want: fmt.Sprintf("at least --tick (%v)", c.tick)},
		cli.FlagRule{Flag: "--eval-every", Value: c.evalEvery, OK: c.evalEvery >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--log-every", Value: c.logEvery, OK: c.logEvery >= 1, Want: "at least 1"},
		cli.FlagRule{Flag: "--checkpoint-every", Value: c.checkpointEvery, OK: c.checkpointEvery >= 0, Want: "0 (none) or more"},
		cli.FlagRule{Flag: "--energy-slack", Value: c.energySlack, OK: c.energySlack >= 1 && c.energySlack <= 100, Want: "from 1 to 100"},
		cli.FlagRule{Flag: "--battery-floor", Value: c.batteryFloor, OK: c.batteryFloor >= 0 && c.batteryFloor <= 100, Want: "a percentage from 0 (off) to 100"},
	); err != nil {
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	switch {
	case c.deadlineFactor != 0 && !(c.deadlineFactor >= 1 && c.deadlineFactor <= 1e6), c.deadlineFloor < 0:
		return c, fmt.Errorf("%w: --deadline-factor %v: want 0 (always --deadline) or from 1 to 1e6, and --deadline-floor %v not negative", errUsage, c.deadlineFactor, c.deadlineFloor)
	case c.iterations == 0 && c.epochs == 0 && c.patience == 0:
		return c, fmt.Errorf("%w: nothing stops the run: give --iterations, --epochs or --patience", errUsage)
	}
	if c.maxWorkers > c.batch {
		c.maxWorkers = c.batch
	}
	if err := web.CheckAddr(c.http); err != nil {
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(c.listen) == 0 && c.psk == "" {
		c.listen = []string{"/ip4/0.0.0.0/tcp/0", "/ip4/0.0.0.0/udp/0/quic-v1"}
	} else if len(c.listen) == 0 {
		c.listen = []string{"/ip4/0.0.0.0/tcp/0"}
	}
	return c, nil
}

// resolveOptimizer settles the optimizer, codec and learning rate the flags
// left to cotrain's defaults:
//
//   - no --compress: hub.DefaultCompression of the optimizer (fp16 with
//     Adam, top-k with SGD);
//   - a top-k session without --optimizer trains with SGD. Top-k keeps SGD
//     with momentum as accurate as no compression (momentum correction),
//     but Adam, even with Adam correction on the workers, loses about 1.5
//     points on lenet-caffe (docs/compression.md). One that asks for Adam
//     gets it, with a warning on stderr;
//   - no --lr: 0.004 with Adam, 0.05 with SGD.
func (c *config) resolveOptimizer(fs *flag.FlagSet, stderr io.Writer) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.optimizer != "adam" && c.optimizer != "sgd" {
		return fmt.Errorf("%w: --optimizer %q, want adam or sgd", errUsage, c.optimizer)
	}
	if c.compress == "" {
		c.compress = hub.DefaultCompression(c.optimizer)
	}
	codec, err := compress.Parse(c.compress)
	if err != nil {
		return fmt.Errorf("%w: --compress: %v", errUsage, err)
	}
	if codec.Format() == compress.FormatSparse {
		switch {
		case !set["optimizer"]:
			c.optimizer = "sgd"
		case c.optimizer == "adam":
			fmt.Fprintf(stderr, "hub: --compress %s with --optimizer adam: Adam under top-k lost about 1.5 points of accuracy "+
				"where SGD with momentum lost none (docs/compression.md); leave --optimizer out for SGD, or use --compress fp16\n", c.compress)
		}
	}
	if !set["lr"] {
		c.lr = map[string]float64{"adam": adamLR, "sgd": sgdLR}[c.optimizer]
	}
	return nil
}

// The default learning rates: Adam's is what trains lenet5 and lenet-caffe
// well at global batches of 64 to 192; SGD's, with momentum 0.9, reaches
// 97% on lenet5 in 300 iterations of 192 (cmd/hub's process test).
const (
	adamLR = 0.004
	sgdLR  = 0.05
)

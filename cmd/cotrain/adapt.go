package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cotrain/cotrain/cmd/internal/experiment"
)

// runAdapt is cotrain adapt: its flags; the experiment itself is
// cmd/internal/experiment's (Adapt).
func runAdapt(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c experiment.AdaptConfig
	fs := newFlags("adapt", stderr, "cotrain adapt [--out DIR] [--tasks lenet,mobilenet] [sizes] [--json]",
		"Compares the four ways to adapt a pretrained model to new data, on this device alone and on 3 simulated phones, and writes plots to --out.")
	fs.StringVar(&c.Out, "out", "cotrain-adapt", "folder for the pretrained weights, results.json, table.md and the plots")
	fs.StringVar(&c.Tasks, "tasks", "lenet,mobilenet", "tasks to run: lenet (digits 0-4 to 5-9), mobilenet (MNIST to contrast-inverted MNIST)")
	fs.IntVar(&c.Pretrain, "pretrain", 6000, "training images of the source task")
	fs.IntVar(&c.PretrainEpochs, "pretrain-epochs", 2, "epochs of pretraining")
	fs.IntVar(&c.Train, "train", 1500, "training images of the user's (target) task, spread over the phones")
	fs.IntVar(&c.Epochs, "epochs", 3, "epochs over the target training images for modes b, c, d")
	fs.IntVar(&c.Test, "test", 1000, "test images of the target task")
	fs.StringVar(&c.Bandwidth, "bandwidth", "32Mbit", "shared Wi-Fi bandwidth of the cooperative runs")
	fs.StringVar(&c.Compress, "compress", "", "gradient codec of the cooperative runs: none, fp16, int8, topk[:FRACTION] (default: cotrain's for SGD, topk:0.01)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of initialisation, data order and the simulation")
	fs.BoolVar(&c.InProc, "inproc", false, "run every row in this process (no per-row peak memory; for tests)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON line per row")
	fs.StringVar(&c.Row, "row", "", "internal: run one row TASK:MODE:SETTING and print its JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	err := experiment.Adapt(ctx, c, stdout, stderr)
	if errors.Is(err, experiment.ErrUsage) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

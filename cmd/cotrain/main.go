// Command cotrain trains, fine-tunes, evaluates and runs models on one
// device. Cooperative training uses the hub and worker commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/gpu"
	_ "github.com/cotrain/cotrain/gpu/cpu" // the driver "cpu" (--device cpu, and auto without a GPU)
)

const usage = `Usage: cotrain COMMAND [flags] (flags may come before or after other arguments)

cotrain trains, fine-tunes, evaluates and runs neural networks on this device.

Commands:
  cotrain train    --model lenet5 --data mnist|DIR --epochs 1 --seed 1 [--normalize mnist|imagenet|unit|M,S] [--out DIR] [--json]
  (train and finetune checkpoint to --out on Ctrl-C/SIGTERM and every --checkpoint-every steps; --resume continues)
  cotrain finetune --weights FILE|MODEL.onnx --data mnist|DIR --train-last N|all [flags]
  cotrain eval     --weights FILE --data mnist|DIR [--json]
  cotrain predict  --weights FILE --input FILE... [--json]
  (these four take --device auto|cpu|opencl[:N]; FILE may be an imported ONNX model, or an .onnx file;
   a DIR of images has one subfolder per class: the sorted names are the classes, stored in the weight file)
  cotrain import   --onnx FILE --out WEIGHTS [--normalize imagenet] [--json]
  cotrain export   --weights FILE --onnx OUT [--json]
  cotrain adapt    --out DIR: the four ways to adapt a pretrained model, alone and on 3 simulated phones
  cotrain profile  --model NAME|--weights FILE [--train-last N] --batch N: time and peak memory of training steps on random data
  cotrain models   list the models
  cotrain vocab    --data FILE.txt|DIR --out VOCAB: the vocabulary of text, for train and hub --vocab
  cotrain keygen   [--out swarm.key]: a new key for hub and worker --psk
  cotrain version  the module version and VCS revision this binary was built from (also --version)

Run "cotrain COMMAND --help" for a command's flags.
`

func main() {
	ctx, stop := signalContext(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var intr *interruptedError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &intr):
		// train and finetune saved a checkpoint: exit as the signal would
		// have (130 for Ctrl-C), so that scripts see an interrupted run.
		fmt.Fprintln(os.Stderr, "cotrain:", err)
		os.Exit(intr.exitCode())
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "cotrain:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "cotrain:", err)
		os.Exit(1)
	}
}

var errUsage = cli.ErrUsage

// run dispatches a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "train":
		return runTrain(ctx, rest, stdout, stderr, false)
	case "finetune":
		return runTrain(ctx, rest, stdout, stderr, true)
	case "eval":
		return runEval(ctx, rest, stdout, stderr)
	case "predict":
		return runPredict(ctx, rest, stdout, stderr)
	case "import":
		return runImport(ctx, rest, stdout, stderr)
	case "export":
		return runExport(ctx, rest, stdout, stderr)
	case "vocab":
		return runVocab(ctx, rest, stdout, stderr)
	case "adapt":
		return runAdapt(ctx, rest, stdout, stderr)
	case "profile":
		return runProfile(ctx, rest, stdout, stderr)
	case "models":
		return runModels(rest, stdout, stderr)
	case "keygen":
		return runKeygen(ctx, rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, cli.Version("cotrain"))
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// newFlags returns a flag set whose errors come back to run instead of
// exiting; its --help prints the usage line synopsis, the sentence about
// and the flags (cli.SetUsage).
func newFlags(name string, stderr io.Writer, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cli.SetUsage(fs, stderr, synopsis, about)
	return fs
}

// parse parses flags, which may also follow positional arguments
// (cli.ParseArgs), mapping bad flags to errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := cli.ParseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// deviceUsage is the help text of the --device flag.
const deviceUsage = "compute device: auto (an OpenCL GPU if this build and the phone have one, else the CPU), cpu, opencl or opencl:N"

// openDevice returns the backend --device names (gpu.Open), logging the
// choice and any fallback to stderr, and a function that releases it. A
// spec gpu.Open does not understand is a usage error.
func openDevice(spec string, stderr io.Writer) (gpu.Backend, func(), error) {
	return openDeviceWith(spec, false, stderr)
}

// fp16Usage is the help text of the --fp16 flag.
const fp16Usage = "store weights and activations as half floats on the OpenCL device (half the memory; inference only)"

// openDeviceWith is openDevice, with half storage when fp16 is set.
func openDeviceWith(spec string, fp16 bool, stderr io.Writer) (gpu.Backend, func(), error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts, err := cli.OpenOptions(gpu.OpenOptions{Log: log, HalfStorage: fp16}, os.LookupEnv)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	b, err := gpu.Open(spec, opts)
	if errors.Is(err, gpu.ErrDeviceSpec) {
		return nil, nil, fmt.Errorf("%w: --device: %w", errUsage, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--device %s: %w", spec, err)
	}
	release := func() {}
	if c, ok := b.(io.Closer); ok {
		release = func() { c.Close() }
	}
	return b, release, nil
}

// Command sim runs a cotrain scenario in the simulator: the real hub and
// worker cores over an in-memory transport with a virtual clock, real
// gradients, simulated time. With no flags it runs paper-table1 on MNIST and
// prints a table comparing each phone alone with co-training under fixed
// and adaptive batch shares; plots go to --out.
//
//	go run ./cmd/sim
//	go run ./cmd/sim --scenario paper-300mbit
//	go run ./cmd/sim --scenario my.txt --seed 7 --json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cotrain/cotrain/cmd/internal/cli"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.Scenario, "scenario", "paper-table1", "built-in scenario name or scenario file")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed (0: the scenario's)")
	flag.BoolVar(&cfg.JSON, "json", false, "print JSON lines instead of a table")
	flag.StringVar(&cfg.Out, "out", "cotrain-report", "folder for the plots (empty: none)")
	flag.IntVar(&cfg.Iterations, "iterations", 0, "cap every run at this many iterations (0: the scenario's)")
	flag.StringVar(&cfg.Policies, "policies", "", "runs to make, comma-separated (e.g. solo,adaptive; default: the scenario's)")
	flag.StringVar(&cfg.Policy, "policy", "", "co-training policy the JSON done event reports (default: the scenario's primary)")
	flag.StringVar(&cfg.Bandwidth, "bandwidth", "", "override the network bandwidth (e.g. 300Mbit)")
	flag.IntVar(&cfg.Parallel, "parallel", 0, "runs at once (0: one per CPU)")
	flag.StringVar(&cfg.Compress, "compress", "", "gradient codec of the co-training runs: none, fp16, int8, topk[:FRACTION] (default: the scenario's)")
	flag.StringVar(&cfg.Overlap, "overlap", "", "layer-wise push and merge: on or off (default: the scenario's)")
	flag.BoolVar(&cfg.List, "list", false, "list the built-in scenarios and device profiles")
	version := cli.VersionFlag(flag.CommandLine)
	cli.SetUsage(flag.CommandLine, os.Stderr, "sim [--scenario NAME|FILE] [--seed N] [--policies solo,adaptive] [--out DIR] [--json] [flags]",
		"Runs a cotrain scenario in the simulator (the real hub and worker code, real gradients, simulated phones and Wi-Fi on a virtual clock) "+
			"and prints a table comparing each phone alone with co-training; plots and index.html go to --out.")
	// flag.CommandLine exits on a bad flag (2) and on --help (0).
	cli.ParseArgs(flag.CommandLine, os.Args[1:])
	if *version {
		fmt.Println(cli.Version("sim"))
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sim: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Command worker joins a cooperative training run: it finds the hub (by
// --hub, or over mDNS by --session), trains on its own shard of the data,
// pushes gradients and applies the hub's merged updates.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/watch/web"
	"github.com/cotrain/cotrain/worker"
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
		fmt.Println(cli.Version("worker"))
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "worker: stopped; left the session")
	default:
		// Errors from the worker packages already say "worker: ".
		msg := err.Error()
		if !strings.HasPrefix(msg, "worker: ") {
			msg = "worker: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = cli.ErrUsage

type config struct {
	hubAddr, session, dataSpec, shard, out, name, identity, psk, device string
	powerSupply                                                         string
	computeWatts, radioWatts                                            float64
	batteryEvery                                                        time.Duration
	http                                                                string
	listen                                                              []string
	seed                                                                uint64
	maxPixels                                                           int // --max-pixels
	window, stride                                                      int // --window, --stride (sensor data)
	json, verbose                                                       bool
	find, reconnect                                                     time.Duration
	slowdown                                                            float64
	logEvery                                                            int
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	cli.SetUsage(fs, stderr, "worker [--hub MULTIADDR] [--session NAME] --data mnist|DIR --shard I/N [--out DIR] [--json] [--http 127.0.0.1:8081]",
		"Joins a hub's cooperative training run with this device's data: it checks the data, registers, trains on its shard, "+
			"pushes gradients and applies the hub's merged updates.")
	host, _ := os.Hostname()
	fs.StringVar(&c.hubAddr, "hub", "", "the hub's multiaddr (with /p2p/<peer id>); empty: find it over mDNS")
	fs.StringVar(&c.session, "session", "", "with no --hub: join the hub of this session (empty: the only hub found)")
	fs.DurationVar(&c.find, "find-timeout", 3*time.Second, "how long to listen for hubs over mDNS")
	ddef := worker.DefaultDriverConfig()
	fs.DurationVar(&c.reconnect, "reconnect-timeout", ddef.ReconnectTimeout, fmt.Sprintf("when the hub's connection drops, how long to keep dialling it again (backoff %v doubling to %v; 0: give up at once)", ddef.Backoff.Min, ddef.Backoff.Max))
	fs.Float64Var(&c.slowdown, "slowdown", 1, "for tests: play a device this many times slower (sleeps after each pass)")
	fs.StringVar(&c.dataSpec, "data", "mnist", "training data: "+cli.DataUsage+"; the hub refuses a worker whose classes differ from its model's; "+
		"text is read through the vocabulary the hub sends with its language model (words it lacks become <unk>)")
	fs.IntVar(&c.window, "window", 0, "sensor data: window length in time steps (0: the model's input length, sent by the hub; another value is refused)")
	fs.IntVar(&c.stride, "stride", 0, "sensor data: steps between window starts (0: the hub's, sent with the model; another value is refused)")
	fs.StringVar(&c.shard, "shard", "0/1", "this worker's shard I/N of the training data (I from 0 to N-1); of text, the I-th of N contiguous pieces of every file")
	fs.StringVar(&c.out, "out", "cotrain-worker", "folder for the final weights")
	fs.StringVar(&c.name, "name", "", "device name shown on the hub (default: this host's name and the shard's number, "+host+"-I, so that two workers on one host differ)")
	fs.StringVar(&c.device, "device", "auto", "compute device: auto (an OpenCL GPU if this build and the phone have one, else the CPU), cpu, opencl or opencl:N")
	fs.StringVar(&c.identity, "identity", "", "libp2p key file (created if missing); empty: a new identity each run")
	fs.StringVar(&c.psk, "psk", "", "swarm.key file of the hub's private network")
	fs.Var((*cli.ListFlag)(&c.listen), "listen", "multiaddr for this worker's own host (repeatable; default loopback TCP and QUIC)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for this worker's shuffling")
	fs.IntVar(&c.maxPixels, "max-pixels", data.DefaultMaxPixels, cli.MaxPixelsUsage)
	fs.IntVar(&c.logEvery, "log-every", 10, "iterations between progress lines")
	fs.BoolVar(&c.json, "json", false, "print JSON lines instead of progress: every event with its time, progress every --log-every pushes (docs/dashboard.md)")
	fs.StringVar(&c.http, "http", "", "serve this worker's live dashboard, /api/status, /api/events and /metrics on this address (e.g. 127.0.0.1:8081, then open it in the phone's browser; :8081 exposes them to the LAN, read-only: docs/dashboard.md); empty: off")
	fs.StringVar(&c.powerSupply, "power-supply", worker.DefaultPowerSupply, "the power_supply folder (Linux and Android sysfs) the battery is read from, to report to the hub with the pushes (a hub with --battery-floor parks a phone that runs low); empty: report none")
	fs.Float64Var(&c.computeWatts, "compute-watts", 0, "declare to the hub what training draws on this phone above idle, in watts, for a hub with --policy energy (docs/energy.md has figures); 0: declare none")
	fs.Float64Var(&c.radioWatts, "radio-watts", 0, "declare what the Wi-Fi radio draws while it sends, in watts (with --compute-watts); 0: declare none")
	fs.DurationVar(&c.batteryEvery, "battery-every", 30*time.Second, "how often to read the battery (a change goes to the hub at once, also while parked)")
	fs.BoolVar(&c.verbose, "v", false, "log every push and merge")
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
	if c.maxPixels < 1 {
		return c, fmt.Errorf("%w: --max-pixels must be at least 1", errUsage)
	}
	if c.slowdown < 1 || c.reconnect < 0 {
		return c, fmt.Errorf("%w: --slowdown must be at least 1 and --reconnect-timeout not negative", errUsage)
	}
	if c.computeWatts < 0 || c.radioWatts < 0 {
		return c, fmt.Errorf("%w: --compute-watts %v, --radio-watts %v: want 0 (none) or more", errUsage, c.computeWatts, c.radioWatts)
	}
	if c.batteryEvery <= 0 {
		return c, fmt.Errorf("%w: --battery-every %v: want more than 0", errUsage, c.batteryEvery)
	}
	if c.logEvery < 1 {
		return c, fmt.Errorf("%w: --log-every must be positive", errUsage)
	}
	if err := web.CheckAddr(c.http); err != nil {
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(c.listen) == 0 {
		c.listen = []string{"/ip4/0.0.0.0/tcp/0"}
	}
	if c.name == "" {
		c.name = defaultName(host, c.shard)
	}
	return c, nil
}

// defaultName is the device name of a worker given no --name: the host's
// name and its shard's number ("phone-1" for --shard 1/2), so that workers
// started on one host show as different devices on the hub.
func defaultName(host, shard string) string {
	if host == "" {
		host = "worker"
	}
	i, _, _ := strings.Cut(shard, "/")
	return host + "-" + i
}

//go:build ignore

// gen_accel writes simulated 3-axis accelerometer recordings (data.GenerateAccel:
// walking, running, sitting, standing, stairs) as a folder of CSV files, one
// sub-folder per activity, the layout data.LoadSensorFolder reads:
//
//	go run scripts/gen_accel.go -out /tmp/accel -seed 1 -recordings 8 -seconds 60
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/cotrain/cotrain/data"
)

func main() {
	out := flag.String("out", "", "folder to write (created if needed; required)")
	seed := flag.Uint64("seed", 1, "seed of every random choice: the same flags write the same bytes")
	recs := flag.Int("recordings", 4, "recordings per activity")
	secs := flag.Float64("seconds", 30, "length of each recording in seconds")
	rate := flag.Float64("rate", 50, "samples per second")
	acts := flag.String("activities", strings.Join(data.AccelActivities(), ","), "comma-separated activities to record")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "gen_accel: want -out DIR and no arguments")
		flag.Usage()
		os.Exit(2)
	}
	opt := data.AccelOptions{Activities: strings.Split(*acts, ","), Recordings: *recs, Seconds: *secs, Rate: *rate, Seed: *seed}
	if err := data.GenerateAccel(*out, opt); err != nil {
		fmt.Fprintln(os.Stderr, "gen_accel:", err)
		os.Exit(1)
	}
	fmt.Printf("gen_accel: %d recordings of %v s at %v Hz per activity (%s) in %s, seed %d\n",
		*recs, *secs, *rate, *acts, *out, *seed)
}

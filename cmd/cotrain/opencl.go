//go:build opencl

package main

// The OpenCL backend, in a build with -tags opencl: its init registers the
// driver "opencl" that --device opencl, opencl:N and auto open.
import (
	"fmt"
	"io"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/opencl"
)

// kernelProfile runs steps more steps of a profile with the OpenCL
// backend's per-kernel timing on (each launch waited for), launches named
// by their layer pass as well when layers is set, and writes the table to
// w, longest first. It reports false for another backend.
func kernelProfile(b gpu.Backend, layers bool, steps int, step func() error, w io.Writer) (bool, error) {
	cl, ok := b.(*opencl.OpenCL)
	if !ok {
		return false, nil
	}
	cl.ProfileSections(layers)
	defer cl.ProfileSections(false)
	cl.Profile(true)
	for i := 0; i < steps; i++ {
		if err := step(); err != nil {
			cl.Profile(false)
			return true, err
		}
	}
	prof := cl.Profile(false)
	var total time.Duration
	for _, kt := range prof {
		total += kt.Total
	}
	fmt.Fprintf(w, "kernel profile over %d steps: %v in %d entries\n", steps, total, len(prof))
	for _, kt := range prof {
		fmt.Fprintf(w, "  %-60s %6d launches %10v %5.1f%%\n", kt.Name, kt.Launches, kt.Total, 100*kt.Total.Seconds()/total.Seconds())
	}
	return true, nil
}

//go:build unix

package cpu

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system time so far: on a machine that
// others share it moves less with their load than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per iteration since start as
// cpu-ms/op (run with -cpu 1 for it to be one thread's work).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/1e6/float64(b.N), "cpu-ms/op")
}

//go:build !unix

package cpu

import (
	"testing"
	"time"
)

// cpuTime is zero where getrusage is missing: no cpu-ms/op is reported.
func cpuTime() time.Duration { return 0 }

func reportCPU(*testing.B, time.Duration) {}

//go:build opencl

package opencl

import (
	"cmp"
	"testing"
)

// WithRedPartLen returns cfg with the part length of the two-level
// reductions (knobs.redPartLen) set to n, for an external benchmark that
// opens its backend itself.
func WithRedPartLen(cfg Config, n int) Config {
	kn := defaultKnobs()
	if cfg.knobs != nil {
		kn = *cfg.knobs
	}
	kn.redPartLen = n
	cfg.knobs = &kn
	return cfg
}

// SetStaging turns o's pinned staging on or off (stage.go) with the
// given geometry in bytes (0: the default of each), for the external tests
// and benchmarks, and returns a function restoring what o had.
func SetStaging(o *OpenCL, on bool, min, chunk, slots int) (restore func()) {
	c := o.ctx
	st := &c.st
	oldOn, oldMin, oldChunk, oldSlots := st.on, st.min, st.chunk, st.nsl
	must(c.setupStaging(on, cmp.Or(min, defaultStageMin), cmp.Or(chunk, defaultStageChunk), cmp.Or(slots, defaultStageSlots), st.log))
	return func() { must(c.setupStaging(oldOn, oldMin, oldChunk, oldSlots, st.log)) }
}

// Staged returns the bytes o moved through its pinned staging slots.
func Staged(o *OpenCL) int64 { return o.ctx.st.staged }

// TransferQueued returns the bytes o wrote through its transfer queue
// (xfer.go).
func TransferQueued(o *OpenCL) int64 { return o.ctx.xferUp }

// BenchBatch is benchBatch (COTRAIN_BENCH_BATCH, else 32) for the external
// step benchmarks.
func BenchBatch(b *testing.B) int { return benchBatch(b) }

// EnvConfig is envConfig for the external tests and benchmarks.
func EnvConfig() Config { return envConfig() }

//go:build opencl

package gpu

// SetRedPartLen sets the part length of two-level reductions (redPartLen)
// for the external benchmarks, and returns a function restoring it.
func SetRedPartLen(n int) (restore func()) {
	old := redPartLen
	redPartLen = n
	return func() { redPartLen = old }
}

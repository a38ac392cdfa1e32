//go:build purego || !(amd64 || arm64)

package sgemm

// asmArchs returns nothing: this build uses the pure-Go kernels only.
func asmArchs() []*arch { return nil }

//go:build !opencl

package main

import (
	"io"

	"github.com/cotrain/cotrain/gpu"
)

// kernelProfile reports false: a build without -tags opencl has no
// backend that times its kernels (opencl.go).
func kernelProfile(gpu.Backend, bool, int, func() error, io.Writer) (bool, error) { return false, nil }

//go:build opencl

package main

// The OpenCL backend, in a build with -tags opencl: its init registers the
// driver "opencl" that --device opencl, opencl:N and auto open.
import _ "github.com/cotrain/cotrain/gpu/opencl"

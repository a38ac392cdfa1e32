// Package opencl is cotrain's OpenCL backend: a gpu.Backend on one OpenCL
// device, with the kernels of kernels/*.cl built (or loaded from the disk
// cache) when it opens, GEMMs tuned per device, and convolutions by im2col,
// Winograd or FFT.
//
// The backend is compiled only with the build tag opencl (it links the
// OpenCL ICD loader, libOpenCL.so.1, through cgo). Without the tag this
// package is this file alone and registers nothing, so a binary that
// imports it unconditionally still builds with CGO_ENABLED=0.
//
// Caller's duties:
//  1. Import the package in a file built with the tag (a binary's
//     opencl.go: //go:build opencl, import _ ".../gpu/opencl"); its init
//     registers the driver "opencl" with gpu.Register.
//  2. Open a backend through gpu.Open("opencl" or "opencl:N" or "auto",
//     opts), passing a Config as opts.Config["opencl"] (the binaries build
//     it from their flags and environment); or call New(cfg) directly.
//  3. Close the backend when done (it is an io.Closer): it holds device
//     memory, programs and queues.
package opencl

//go:build !purego

package vec

// maxPool2AVX512 is MaxPool2's vector path; lo, hi and out are the masks of
// the last partial block of each row: its first and second 16 inputs and
// its outputs.
//
//go:noescape
func maxPool2AVX512(y, x *float32, w, ow, oh int, lo, hi, out uint64)

package data

import (
	"fmt"
	"math/rand/v2"
)

// Synthetic returns n MNIST-shaped images (1×28×28, 10 classes, mean and
// deviation 0.5) drawn from r, whose label is written into their pixels:
// every pixel is dim noise (0–63) except those whose index is the label
// modulo 10, which are bright (160–223). A network learns it in a few
// iterations, so tests of the training machinery (hub/, sim/) have
// something to learn without MNIST; the figures of a run on it mean
// nothing. The same r state gives the same set.
func Synthetic(n int, r *rand.Rand) (*Images, error) {
	if n < 1 {
		return nil, errorf(ErrInvalid, "data: synthetic: %d images, want at least 1", n)
	}
	pix := make([]uint8, n*28*28)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(r.IntN(10))
		for j := range 28 * 28 {
			v := r.IntN(64)
			if j%10 == int(labels[i]) {
				v += 160
			}
			pix[i*28*28+j] = uint8(v)
		}
	}
	ds, err := NewImages(pix, labels, 1, 28, 28, 10, []float32{0.5}, []float32{0.5}, nil)
	if err != nil {
		return nil, fmt.Errorf("data: synthetic: %w", err)
	}
	return ds, nil
}

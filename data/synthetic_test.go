package data

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestSynthetic: the same generator state gives the same set; every
// image's bright pixels are those of its label's column class (index mod 10
// equal to the label), so the label can be read back from the pixels.
func TestSynthetic(t *testing.T) {
	a, err := Synthetic(50, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(50, rand.New(rand.NewPCG(1, 2)))
	x, y := make([]float32, 28*28), make([]float32, 28*28)
	for i := range a.Len() {
		la, lb := a.Get(i, x), b.Get(i, y)
		if la != lb || la < 0 || la > 9 {
			t.Fatalf("image %d: labels %d and %d", i, la, lb)
		}
		for j := range x {
			if x[j] != y[j] {
				t.Fatalf("image %d pixel %d differs between two sets of the same seed", i, j)
			}
			// Normalised (v/255−0.5)/0.5: bright pixels are above 0.2, dim ones below −0.4.
			if bright := x[j] > 0; bright != (j%10 == int(la)) {
				t.Fatalf("image %d (label %d): pixel %d is %v", i, la, j, x[j])
			}
		}
	}
	if _, err := Synthetic(0, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrInvalid) {
		t.Errorf("0 images: %v, want ErrInvalid", err)
	}
}

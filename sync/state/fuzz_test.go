package state

import (
	"testing"

	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// FuzzDecodeConfig feeds arbitrary bytes to the decoder of the model config a
// hub sends in its Welcome: no panic, and what it accepts encodes back to a
// config that decodes the same.
func FuzzDecodeConfig(f *testing.F) {
	f.Add(EncodeConfig(models.Config{Classes: 10, Input: solver.Shape{C: 1, H: 28, W: 28}}))
	f.Add(EncodeConfig(models.Config{Classes: 3, Input: solver.Shape{C: 3, H: 32, W: 32}, Width: 0.25}))
	f.Add([]byte("classes=x\n"))
	f.Add([]byte("=\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeConfig(b)
		if err != nil {
			return
		}
		c2, err := DecodeConfig(EncodeConfig(c))
		if err != nil || c2 != c {
			t.Fatalf("config %+v does not round-trip: %+v, %v", c, c2, err)
		}
	})
}

package data

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// seqImages returns n samples of c×h×w whose first two bytes encode the
// sample index (i%256, i/256) and whose label is i%classes. It normalises
// with mean 0 and std 1/255, so Get returns the bytes as floats and
// sampleIndex can decode which sample a buffer holds.
func seqImages(t testing.TB, n, c, h, w, classes int) *Images {
	t.Helper()
	size := c * h * w
	pix := make([]uint8, n*size)
	labels := make([]int32, n)
	for i := range n {
		s := pix[i*size : (i+1)*size]
		for j := range s {
			s[j] = uint8(i*7 + j)
		}
		s[0], s[1] = uint8(i%256), uint8(i/256)
		labels[i] = int32(i % classes)
	}
	mean, std := make([]float32, c), make([]float32, c)
	for i := range std {
		std[i] = 1.0 / 255
	}
	m, err := NewImages(pix, labels, c, h, w, classes, mean, std, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sampleIndex decodes the index seqImages wrote into a sample.
func sampleIndex(x []float32) int {
	return int(math.Round(float64(x[0]))) + 256*int(math.Round(float64(x[1])))
}

func TestNewImagesValidates(t *testing.T) {
	ok := func() ([]uint8, []int32) { return make([]uint8, 2*1*2*2), []int32{0, 1} }
	one := []float32{0.5}
	tests := []struct {
		name      string
		mutate    func(pix *[]uint8, lab *[]int32, c, classes *int, mean, std *[]float32, names *[]string)
		wantError string
	}{
		{"valid", func(*[]uint8, *[]int32, *int, *int, *[]float32, *[]float32, *[]string) {}, ""},
		{"zero channels", func(_ *[]uint8, _ *[]int32, c, _ *int, _, _ *[]float32, _ *[]string) { *c = 0 }, "positive dimensions"},
		{"zero classes", func(_ *[]uint8, _ *[]int32, _, k *int, _, _ *[]float32, _ *[]string) { *k = 0 }, "at least 1"},
		{"short pixels", func(p *[]uint8, _ *[]int32, _, _ *int, _, _ *[]float32, _ *[]string) { *p = (*p)[:7] }, "7 pixel bytes"},
		{"label high", func(_ *[]uint8, l *[]int32, _, _ *int, _, _ *[]float32, _ *[]string) { (*l)[1] = 2 }, "label 2 of sample 1 out of range"},
		{"label negative", func(_ *[]uint8, l *[]int32, _, _ *int, _, _ *[]float32, _ *[]string) { (*l)[0] = -1 }, "label -1 of sample 0"},
		{"names count", func(_ *[]uint8, _ *[]int32, _, _ *int, _, _ *[]float32, n *[]string) { *n = []string{"a"} }, "1 class names for 2"},
		{"std zero", func(_ *[]uint8, _ *[]int32, _, _ *int, _, s *[]float32, _ *[]string) { *s = []float32{0} }, "std[0] = 0"},
		{"std NaN", func(_ *[]uint8, _ *[]int32, _, _ *int, _, s *[]float32, _ *[]string) {
			*s = []float32{float32(math.NaN())}
		}, "std[0] = NaN"},
		{"mean count", func(_ *[]uint8, _ *[]int32, _, _ *int, m, _ *[]float32, _ *[]string) { *m = []float32{0, 0} }, "2 means and 1 stds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pix, lab := ok()
			c, classes := 1, 2
			mean, std := one, one
			var names []string
			tt.mutate(&pix, &lab, &c, &classes, &mean, &std, &names)
			_, err := NewImages(pix, lab, c, 2, 2, classes, mean, std, names)
			if tt.wantError == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantError) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.wantError)
			}
			if !strings.HasPrefix(err.Error(), "data: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestImagesGetNormalises(t *testing.T) {
	// Two channels of 1×3: bytes 0, 128, 255 in each, different stats.
	pix := []uint8{0, 128, 255, 0, 128, 255}
	mean, std := []float32{0.5, 0.25}, []float32{0.5, 2}
	m, err := NewImages(pix, []int32{3}, 2, 1, 3, 4, mean, std, []string{"a", "b", "c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 6)
	if got := m.Get(0, dst); got != 3 {
		t.Fatalf("label = %d, want 3", got)
	}
	for i, p := range pix {
		ch := i / 3
		want := float32((float64(p)/255 - float64(mean[ch])) / float64(std[ch]))
		if dst[i] != want {
			t.Errorf("dst[%d] = %v, want %v", i, dst[i], want)
		}
	}
	if dst[0] != -1 || dst[2] != 1 {
		t.Errorf("channel 0 ends = %v, %v; want -1, 1", dst[0], dst[2])
	}
	if names := m.ClassNames(); strings.Join(names, ",") != "a,b,c,d" {
		t.Errorf("ClassNames = %v", names)
	}
	if m.Label(0) != 3 || m.Len() != 1 || m.Classes() != 4 {
		t.Errorf("Label/Len/Classes = %d/%d/%d", m.Label(0), m.Len(), m.Classes())
	}
	if c, h, w := m.Shape(); c != 2 || h != 1 || w != 3 {
		t.Errorf("Shape = %d,%d,%d", c, h, w)
	}
}

func TestImagesWithNormSharesPixels(t *testing.T) {
	m := seqImages(t, 3, 1, 2, 2, 2)
	n, err := m.WithNorm([]float32{0}, []float32{1})
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, 4), make([]float32, 4)
	m.Get(2, a)
	n.Get(2, b)
	for i := range a {
		if want := a[i] / 255; math.Abs(float64(b[i]-want)) > 1e-6 {
			t.Errorf("renormalised[%d] = %v, want %v", i, b[i], want)
		}
	}
	if mean, _ := m.Norm(); mean[0] != 0 {
		t.Errorf("original mean changed to %v", mean)
	}
	if _, err := m.WithNorm([]float32{0}, []float32{-1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative std: err = %v, want ErrInvalid", err)
	}
	if &m.Pixels(1)[0] != &n.Pixels(1)[0] {
		t.Error("WithNorm copied the pixels")
	}
}

func TestImagesGetPanicsOnShortDst(t *testing.T) {
	m := seqImages(t, 1, 1, 2, 2, 1)
	defer func() {
		if recover() == nil {
			t.Error("Get with a short dst did not panic")
		}
	}()
	m.Get(0, make([]float32, 3))
}

package data

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ramp is the value scripts/make_npy_fixture.py stores at flat index i.
func ramp(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((float64(i) - 7.5) / 4)
	}
	return v
}

func readFixtureBytes(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := readFixtureBytes(name)
	if err != nil {
		t.Fatalf("%v (regenerate with /usr/bin/python3 scripts/make_npy_fixture.py)", err)
	}
	return b
}

func TestReadNPYNumpyFixtures(t *testing.T) {
	tests := []struct {
		file  string
		shape []int
		data  []float32
	}{
		{"f32_2x3x4_v1.npy", []int{2, 3, 4}, ramp(24)},
		{"f32_5_v2.npy", []int{5}, ramp(5)},
		{"f32_scalar_v1.npy", []int{}, []float32{2.5}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			raw := readFixture(t, tt.file)
			data, shape, err := ReadNPY(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(shape, tt.shape) || !slices.Equal(data, tt.data) {
				t.Fatalf("got shape %v data %v, want %v %v", shape, data, tt.shape, tt.data)
			}
			// numpy's version-1.0 files are byte-identical to ours.
			if raw[6] == 1 {
				var buf bytes.Buffer
				if err := WriteNPY(&buf, data, shape); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), raw) {
					t.Errorf("WriteNPY differs from numpy:\n%q\n%q", buf.Bytes(), raw)
				}
			}
		})
	}
}

func TestReadNPYErrors(t *testing.T) {
	good := readFixture(t, "f32_2x3x4_v1.npy")
	v2 := readFixture(t, "f32_5_v2.npy")
	withHeader := func(h string) []byte {
		b := []byte("\x93NUMPY\x01\x00")
		b = append(b, byte(len(h)), byte(len(h)>>8))
		return append(b, h...)
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"float64", readFixture(t, "f64_2x3.npy"), `dtype "<f8" not supported`},
		{"big endian", readFixture(t, "f32_big_endian.npy"), `dtype ">f4" not supported`},
		{"fortran", readFixture(t, "f32_fortran.npy"), "Fortran-order array not supported"},
		{"truncated data", good[:len(good)-3], "truncated: 93 bytes of data, header promises 96"},
		{"truncated data v2", v2[:len(v2)-1], "truncated: 19 bytes"},
		{"truncated header", good[:40], "truncated header"},
		{"truncated length", good[:9], "truncated header length"},
		{"empty", nil, "truncated preamble"},
		{"bad magic", append([]byte("\x93NUMPZ"), good[6:]...), "bad magic"},
		{"version 4", append(append([]byte{}, good[:6]...), append([]byte{4, 0}, good[8:]...)...), "format version 4.0"},
		{"missing shape", withHeader("{'descr': '<f4', 'fortran_order': False, }\n"), `missing key "shape"`},
		{"unknown key", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n"), `unknown key "x"`},
		{"negative dim", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }\n"), "want a dimension"},
		{"bad bool", withHeader("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }\n"), "want True or False"},
		{"unterminated", withHeader("{'descr': '<f4\n"), "unterminated string"},
		{"not a dict", withHeader("['descr']\n"), "want '{'"},
		{"huge shape", withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }\n"), "promises more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadNPY(bytes.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if !errors.Is(err, ErrFormat) || !strings.HasPrefix(err.Error(), "data: npy: ") {
				t.Errorf("err = %v, want a prefixed ErrFormat", err)
			}
		})
	}
}

func TestNPYRoundTrip(t *testing.T) {
	many := make([]int, 25000) // a header over 64 KiB forces version 2.0
	for i := range many {
		many[i] = 1
	}
	tests := []struct {
		name    string
		data    []float32
		shape   []int
		version byte
	}{
		{"scalar", []float32{-3}, []int{}, 1},
		{"empty", []float32{}, []int{0}, 1},
		{"empty 2d", []float32{}, []int{3, 0}, 1},
		{"vector", ramp(7), []int{7}, 1},
		{"specials", []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), math.MaxFloat32, math.SmallestNonzeroFloat32}, []int{2, 3}, 1},
		{"4d", ramp(2 * 3 * 4 * 5), []int{2, 3, 4, 5}, 1},
		{"large chunked", ramp(1<<16 + 3), []int{1<<16 + 3}, 1},
		{"version 2 header", []float32{1.5}, many, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteNPY(&buf, tt.data, tt.shape); err != nil {
				t.Fatal(err)
			}
			raw := buf.Bytes()
			if raw[6] != tt.version {
				t.Errorf("version %d, want %d", raw[6], tt.version)
			}
			hdrEnd := len(raw) - 4*len(tt.data)
			if hdrEnd%64 != 0 || raw[hdrEnd-1] != '\n' {
				t.Errorf("data starts at %d (byte before %q), want a multiple of 64 after '\\n'", hdrEnd, raw[hdrEnd-1])
			}
			// A second array after the first must be left unread.
			buf.Write([]byte("NEXT"))
			r := bytes.NewReader(buf.Bytes())
			data, shape, err := ReadNPY(r)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(shape, tt.shape) || !slices.Equal(data, tt.data) {
				t.Errorf("round trip changed the array: shape %v", shape)
			}
			if r.Len() != 4 {
				t.Errorf("%d bytes left after the array, want 4", r.Len())
			}
		})
	}
}

func TestWriteNPYErrors(t *testing.T) {
	tests := []struct {
		name  string
		data  []float32
		shape []int
		want  string
	}{
		{"count", []float32{1, 2, 3}, []int{2, 2}, "shape [2 2] holds 4 values, have 3"},
		{"negative", nil, []int{-1, 0}, "negative dimension"},
		{"scalar needs one", nil, []int{}, "holds 1 values, have 0"},
	}
	for _, tt := range tests {
		err := WriteNPY(&bytes.Buffer{}, tt.data, tt.shape)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid containing %q", tt.name, err, tt.want)
		}
	}
}

// The resize agrees with PyTorch's interpolate(align_corners=False,
// antialias=True) up to rounding to bytes (golden values from
// scripts/make_image_fixtures.py).
func TestResizeMatchesPyTorch(t *testing.T) {
	src, sshape, err := ReadNPY(bytes.NewReader(readFixture(t, "resize_src_5x7.npy")))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"resize_torch_3x4.npy", "resize_torch_9x11.npy"} {
		want, shape, err := ReadNPY(bytes.NewReader(readFixture(t, name)))
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]uint8, shape[0]*shape[1])
		resizeAA(dst, shape[0], shape[1], src, sshape[0], sshape[1])
		for i, w := range want {
			if math.Abs(float64(dst[i])-float64(w)) > 0.5+1e-3 {
				t.Errorf("%s[%d] = %d, torch %v", name, i, dst[i], w)
			}
		}
	}
}

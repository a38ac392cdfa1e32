package cli

import (
	"errors"
	"testing"
)

// TestParseBytes: units in powers of 1024 and 1000, fractions, and what is
// refused.
func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"", 0}, {"0", 0}, {"64MiB", 64 << 20}, {"64M", 64 << 20}, {"1.5G", 3 << 29}, {"2GB", 2e9}, {"10kB", 1e4}, {"512", 512}, {" 3 KiB ", 3 << 10}, {"7B", 7}} {
		got, err := ParseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"-1M", "M", "1TiB", "NaN", "Inf", "1e300", "12 apples"} {
		if _, err := ParseBytes(in); !errors.Is(err, ErrSize) {
			t.Errorf("ParseBytes(%q): %v, want ErrSize", in, err)
		}
	}
}

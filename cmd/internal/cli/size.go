package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSize is returned for a size that ParseBytes cannot read.
var ErrSize = errors.New("cli: size")

// ParseBytes reads a size in bytes: a number with a unit, B, KiB, MiB or
// GiB (powers of 1024; K, M and G mean the same) or kB, MB, GB (powers of
// 1000), e.g. "1GiB", "512MiB", "1.5G", "0". Empty is 0.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		n      float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mult >= math.MaxInt64/2 {
		return 0, fmt.Errorf("%w: %q: want a number of bytes with a unit, such as 1GiB or 512MiB", ErrSize, s)
	}
	return int64(v * mult), nil
}

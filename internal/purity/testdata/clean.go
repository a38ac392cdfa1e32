package core

import (
	"fmt"
	"math"
)

// Step is pure: arithmetic and formatting only.
func Step(x float64) string { return fmt.Sprint(math.Sqrt(x)) }

package core

import t "time"

// Config holds a length of time: allowed in a durations file.
type Config struct{ Tick t.Duration }

// Default uses unit constants only.
func Default() Config { return Config{Tick: 100 * t.Millisecond} }

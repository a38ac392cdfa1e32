package models

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// A model trained on sensor recordings (windows of C channels × L steps,
// input C×1×L) records how its windows were cut and what its channels are,
// beside its classes and normalisation, so that a worker, `cotrain eval`
// and `cotrain predict --input rec.csv` cut a recording the way its
// training data was cut. The window length is the input's L (Config.Input.W)
// and is not stored twice. For such a model MetaMean and MetaStd are in the
// recordings' units (an input value is (x - mean[c]) / std[c]), not on the
// [0,1] pixel scale.
const (
	// MetaChannels is the JSON array of the recording's channel names
	// ("x", "y", "z"), one per input channel. Its presence marks a model
	// of sensor windows.
	MetaChannels = "input.channels"
	// MetaStride is the step, in time steps, between the starts of
	// consecutive windows of the training recordings.
	MetaStride = "input.stride"
)

// Signals is what a sensor model's meta says about its windows.
type Signals struct {
	Channels []string
	Stride   int
}

// WithSignals returns meta recording s.
func WithSignals(meta [][2]string, s Signals) [][2]string {
	names, _ := json.Marshal(s.Channels) // a []string always marshals
	return SetMeta(SetMeta(meta, MetaChannels, string(names)), MetaStride, strconv.Itoa(s.Stride))
}

// SignalsOf returns what meta records about a sensor model of the given
// input channels, and whether it records it (false: the model is not one
// of sensor windows, or predates these keys). A malformed record, or one of
// another channel count, is an error wrapping ErrMeta.
func SignalsOf(meta [][2]string, channels int) (Signals, bool, error) {
	rc, rs := MetaValue(meta, MetaChannels), MetaValue(meta, MetaStride)
	if rc == "" && rs == "" {
		return Signals{}, false, nil
	}
	var s Signals
	if err := json.Unmarshal([]byte(rc), &s.Channels); err != nil {
		return Signals{}, false, fmt.Errorf("%w: %s %q: %v", ErrMeta, MetaChannels, rc, err)
	}
	if len(s.Channels) != channels {
		return Signals{}, false, fmt.Errorf("%w: %s names %d channels for a model of %d input channels", ErrMeta, MetaChannels, len(s.Channels), channels)
	}
	var err error
	if s.Stride, err = strconv.Atoi(rs); err != nil || s.Stride < 1 {
		return Signals{}, false, fmt.Errorf("%w: %s %q, want a positive number of steps", ErrMeta, MetaStride, rs)
	}
	return s, true, nil
}

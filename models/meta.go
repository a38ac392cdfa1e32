package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// What a model needs besides its layers and weights to be used correctly
// lives in its weight file's Meta, under the keys below: the names of its
// classes and the normalisation its inputs expect. They are Meta entries
// rather than Config keys so that files written before them still load
// (their Meta simply lacks the keys: Labels then numbers the classes and
// InputNorm gives the rule cotrain always used, DefaultNorm).
//
// The input shape is the Config's Input.
const (
	// MetaLabels is the JSON array of class names, indexed by label.
	MetaLabels = "classes.names"
	// MetaMean and MetaStd are the per-channel mean and standard deviation,
	// on the [0,1] pixel scale, as comma-separated decimals: an input value
	// is (pixel/255 - mean[c]) / std[c].
	MetaMean = "input.mean"
	MetaStd  = "input.std"
	// MetaName is the model's name for people, where Model is not one: an
	// imported ONNX model is built as GraphModel ("onnx-graph") from its
	// layer list, and is shown by the name of the file it came from.
	MetaName = "model.name"
)

// DisplayName returns the name to show for the model: MetaName where the
// file records one, else Model.
func (f *File) DisplayName() string {
	if n := MetaValue(f.Meta, MetaName); n != "" {
		return n
	}
	return f.Model
}

// DisplayName is File.DisplayName for a model known by its name and meta
// (a hub's Welcome).
func DisplayName(model string, meta [][2]string) string {
	return (&File{Model: model, Meta: meta}).DisplayName()
}

// ErrMeta is wrapped by errors about a malformed class list or
// normalisation, in a file or on the command line.
var ErrMeta = errors.New("models: bad model metadata")

// Norm is a per-channel input normalisation: value = (p/255 - Mean[c]) / Std[c].
type Norm struct {
	Mean, Std []float32
}

// Named normalisations (NormNames lists them): MNIST's statistics, the
// ImageNet statistics torchvision's pretrained models expect, and the plain
// [0,1] scale.
var namedNorms = map[string]Norm{
	"mnist":    {Mean: []float32{0.1307}, Std: []float32{0.3081}},
	"imagenet": {Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225}},
	"unit":     {Mean: []float32{0}, Std: []float32{1}},
}

// NormNames lists the names ParseNorm takes besides numbers.
func NormNames() []string { return []string{"mnist", "imagenet", "unit"} }

// NormUsage is the help text of the --normalize flags.
const NormUsage = `input normalisation (pixel/255 - mean) / std, per channel: mnist (0.1307, 0.3081), ` +
	`imagenet (0.485,0.456,0.406 / 0.229,0.224,0.225, what torchvision's pretrained models expect), ` +
	`unit (0, 1: inputs in [0,1]), "M,S" (the same for every channel) or "M1,M2,M3,S1,S2,S3"; ` +
	`default: mnist for one channel, 0.5,0.5 (inputs in [-1,1]) for three`

// DefaultNorm is the normalisation of models whose file does not say: the
// rule cotrain applied before files carried it, MNIST's statistics for one
// channel and 0.5, 0.5 (inputs in [-1,1]) otherwise.
func DefaultNorm(channels int) Norm {
	if channels == 1 {
		return namedNorms["mnist"]
	}
	return uniform(channels, 0.5, 0.5)
}

func uniform(channels int, mean, std float32) Norm {
	n := Norm{Mean: make([]float32, channels), Std: make([]float32, channels)}
	for i := range channels {
		n.Mean[i], n.Std[i] = mean, std
	}
	return n
}

// ParseNorm reads a --normalize value for a model of the given channel
// count: a name (NormNames), "M,S" (one mean and std for every channel) or
// 2×channels numbers (the means, then the stds). "" is DefaultNorm. A named
// normalisation of one channel applies to every channel; one of several
// channels (imagenet) must match the model's count.
func ParseNorm(spec string, channels int) (Norm, error) {
	if channels < 1 {
		return Norm{}, fmt.Errorf("%w: %d input channels", ErrMeta, channels)
	}
	if spec == "" {
		return DefaultNorm(channels), nil
	}
	if n, ok := namedNorms[spec]; ok {
		switch len(n.Mean) {
		case 1:
			return uniform(channels, n.Mean[0], n.Std[0]), nil
		case channels:
			return n, nil
		}
		return Norm{}, fmt.Errorf("%w: normalisation %s is for %d channels, the model takes %d", ErrMeta, spec, len(n.Mean), channels)
	}
	parts := strings.Split(spec, ",")
	v := make([]float32, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil {
			return Norm{}, fmt.Errorf("%w: normalisation %q: want %v, \"M,S\" or %d means then %d stds; %q is not a number",
				ErrMeta, spec, NormNames(), channels, channels, p)
		}
		v[i] = float32(f)
	}
	var n Norm
	switch len(v) {
	case 2:
		n = uniform(channels, v[0], v[1])
	case 2 * channels:
		n = Norm{Mean: v[:channels], Std: v[channels:]}
	default:
		return Norm{}, fmt.Errorf("%w: normalisation %q has %d numbers: want 2 or %d (%d means, then %d stds)",
			ErrMeta, spec, len(v), 2*channels, channels, channels)
	}
	return n, n.Check(channels)
}

// Check returns an error unless n has one finite mean and one finite,
// positive std per channel.
func (n Norm) Check(channels int) error {
	if len(n.Mean) != channels || len(n.Std) != channels {
		return fmt.Errorf("%w: %d means and %d stds for %d channels", ErrMeta, len(n.Mean), len(n.Std), channels)
	}
	for c := range channels {
		m, s := float64(n.Mean[c]), float64(n.Std[c])
		if math.IsNaN(m) || math.IsInf(m, 0) || !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("%w: channel %d has mean %v and std %v (want finite, std > 0)", ErrMeta, c, n.Mean[c], n.Std[c])
		}
	}
	return nil
}

// String writes n as "mean 0.485,0.456,0.406 std 0.229,0.224,0.225".
func (n Norm) String() string { return "mean " + floatList(n.Mean) + " std " + floatList(n.Std) }

func floatList(v []float32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return strings.Join(s, ",")
}

func parseFloatList(key, s string) ([]float32, error) {
	var out []float32
	for p := range strings.SplitSeq(s, ",") {
		f, err := strconv.ParseFloat(p, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: %q is not a number", ErrMeta, key, s, p)
		}
		out = append(out, float32(f))
	}
	return out, nil
}

// MetaValue returns the value of key in meta, or "".
func MetaValue(meta [][2]string, key string) string {
	for _, kv := range meta {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// SetMeta returns meta with key set to value: the first entry of key
// replaced (later ones dropped), or one appended.
func SetMeta(meta [][2]string, key, value string) [][2]string {
	out := make([][2]string, 0, len(meta)+1)
	set := false
	for _, kv := range meta {
		if kv[0] != key {
			out = append(out, kv)
		} else if !set {
			out, set = append(out, [2]string{key, value}), true
		}
	}
	if !set {
		out = append(out, [2]string{key, value})
	}
	return out
}

// InputNorm returns the normalisation meta records for a model of the
// given input channels, and whether meta records one; without one it is
// DefaultNorm. A malformed record is an error wrapping ErrMeta.
func InputNorm(meta [][2]string, channels int) (Norm, bool, error) {
	ms, ss := MetaValue(meta, MetaMean), MetaValue(meta, MetaStd)
	if ms == "" && ss == "" {
		return DefaultNorm(channels), false, nil
	}
	mean, err := parseFloatList(MetaMean, ms)
	if err != nil {
		return Norm{}, false, err
	}
	std, err := parseFloatList(MetaStd, ss)
	if err != nil {
		return Norm{}, false, err
	}
	n := Norm{Mean: mean, Std: std}
	if err := n.Check(channels); err != nil {
		return Norm{}, false, err
	}
	return n, true, nil
}

// WithNorm returns meta recording n.
func WithNorm(meta [][2]string, n Norm) [][2]string {
	return SetMeta(SetMeta(meta, MetaMean, floatList(n.Mean)), MetaStd, floatList(n.Std))
}

// Labels returns the class names meta records for a model of the given
// class count, and whether it records them; without them the classes are
// numbered ("0", "1", ...), as they were before files carried names. A
// list that is not JSON, of another length, or with an empty or repeated
// name is an error wrapping ErrMeta.
func Labels(meta [][2]string, classes int) ([]string, bool, error) {
	raw := MetaValue(meta, MetaLabels)
	if raw == "" {
		return NumberedLabels(classes), false, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(raw), &names); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrMeta, MetaLabels, err)
	}
	if len(names) != classes {
		return nil, false, fmt.Errorf("%w: %d class names for a model of %d classes", ErrMeta, len(names), classes)
	}
	if err := CheckLabels(names); err != nil {
		return nil, false, err
	}
	return names, true, nil
}

// CheckLabels returns an error wrapping ErrMeta unless names is a non-empty
// list of non-empty, distinct names.
func CheckLabels(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("%w: no class names", ErrMeta)
	}
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" || seen[n] {
			return fmt.Errorf("%w: class %d is named %q (want non-empty, distinct names)", ErrMeta, i, n)
		}
		seen[n] = true
	}
	return nil
}

// WithLabels returns meta recording the class names.
func WithLabels(meta [][2]string, names []string) [][2]string {
	b, _ := json.Marshal(names) // a []string always marshals
	return SetMeta(meta, MetaLabels, string(b))
}

// NumberedLabels returns "0", "1", ..., n-1: the names of classes nobody named.
func NumberedLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// DefiningMeta returns the entries of meta that define the model rather
// than one run of it, in a fixed key order: its graph (MetaGraph), class
// names, input normalisation, vocabulary (MetaVocab) and, for a model of
// sensor windows, their channels and stride (MetaChannels, MetaStride).
// They are what a hub sends its workers with
// the model, and what every node's final weight file holds, so that all
// write the same bytes.
func DefiningMeta(meta [][2]string) [][2]string {
	var out [][2]string
	for _, k := range []string{MetaGraph, MetaName, MetaLabels, MetaMean, MetaStd, MetaVocab, MetaChannels, MetaStride} {
		if v := MetaValue(meta, k); v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// DescribeLabelDiff says for a person how names differ from want, whose
// owner is wantName ("the model"): "extra classes d, e (not in the
// model); missing classes b", or "the same classes in another order"
// (LabelDiff's three answers, in that order); "" when they are equal.
func DescribeLabelDiff(want, names []string, wantName string) string {
	missing, extra, order := LabelDiff(want, names)
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, "extra classes "+strings.Join(extra, ", ")+" (not in "+wantName+")")
	}
	if len(missing) > 0 {
		parts = append(parts, "missing classes "+strings.Join(missing, ", "))
	}
	if order {
		parts = append(parts, "the same classes in another order")
	}
	return strings.Join(parts, "; ")
}

// LabelDiff says how names (a worker's) differ from want (the model's):
// the classes missing from names and those it has extra, each sorted; both
// empty with the same order means equal. A list with the same classes in
// another order is reported through order.
func LabelDiff(want, names []string) (missing, extra []string, order bool) {
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	wanted := map[string]bool{}
	for _, n := range want {
		wanted[n] = true
		if !have[n] {
			missing = append(missing, n)
		}
	}
	for _, n := range names {
		if !wanted[n] {
			extra = append(extra, n)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	order = len(missing) == 0 && len(extra) == 0 && !slices.Equal(want, names)
	return missing, extra, order
}

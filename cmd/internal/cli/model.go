package cli

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx"
	"github.com/cotrain/cotrain/solver"
)

// TrainLastDefault and TrainLastUsage are the default and help text of the
// --train-last flag of `cotrain finetune` and `hub`: both fine-tune by the
// same rule (TrainLast).
const (
	TrainLastDefault = "1"
	TrainLastUsage   = "train only the last N layers with parameters (the others are frozen: no weight gradients are computed for them), or all"
)

// WeightsNormUsage is the help text of --normalize where --weights may
// name the model (`cotrain finetune`, `hub`): LoadModel's rule.
const WeightsNormUsage = models.NormUsage + "; with --weights only for an .onnx model or a file that records none"

// TrainLast freezes net as a --train-last value says: "all" trains every
// layer, N the last N layers with parameters. Anything else is an error
// (CheckTrainLast tells before any work), and so is an N above the number
// of layers with parameters the model has: "--train-last 500" on a model of
// 12 such layers is refused rather than silently training all of them.
func TrainLast(net *solver.Net, spec string) error {
	n, err := parseTrainLast(spec)
	if err != nil {
		return err
	}
	layers := 0
	for _, l := range net.Layers() {
		if l.Params > 0 {
			layers++
		}
	}
	if n > layers {
		return fmt.Errorf("--train-last %d: the model has %d layers with parameters; give at most %d, or all", n, layers, layers)
	}
	if n == 0 {
		net.Unfreeze()
	} else {
		net.FreezeAllButLast(n)
	}
	return nil
}

// CheckTrainLast returns TrainLast's error for spec without a network.
func CheckTrainLast(spec string) error {
	_, err := parseTrainLast(spec)
	return err
}

// parseTrainLast returns N, or 0 for "all".
func parseTrainLast(spec string) (int, error) {
	if spec == "all" {
		return 0, nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--train-last %q: want a positive number or all", spec)
	}
	return n, nil
}

// ImportONNX reads an ONNX model into a weight file of model
// models.GraphModel, recording the input normalisation normalize names
// (models.ParseNorm), and builds it once so that a file that is returned
// always loads. With normalize "" the file keeps the normalisation the ONNX
// file's metadata records (cotrain export writes it, with the class
// names), or else gets models.DefaultNorm; a 1-D model (N×C×L input, of
// sensor windows) then records none, and takes its data's. It is what `cotrain import` does,
// and what `hub --weights` and `cotrain finetune --weights` do with a .onnx
// file.
func ImportONNX(path, normalize string) (*models.File, *solver.Net, error) {
	// ImportFile reads external data (model.onnx.data) from the model's folder.
	f, err := onnx.ImportFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	norm, set, err := f.InputNorm()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	// A model of sensor windows (N×C×L input) given no normalisation
	// records none: the recordings it is fine-tuned on give theirs, in
	// their own units (PrepareModel), where an image default would be
	// meaningless.
	oneD := f.Config.Input.H == 1 && f.Config.Input.W > 1
	if normalize != "" || (!set && !oneD) {
		if norm, err = models.ParseNorm(normalize, f.Config.Input.C); err != nil {
			return nil, nil, fmt.Errorf("--normalize: %w", err)
		}
		set = true
	}
	if set {
		f.Meta = models.WithNorm(f.Meta, norm)
	}
	if f.MetaValue(models.MetaName) == "" {
		// Shown as the file's name ("mobilenet_v2"), not as "onnx-graph".
		f.Meta = models.SetMeta(f.Meta, models.MetaName, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, net, nil
}

// IsONNX reports whether path names an ONNX model (by its extension) rather
// than a cotrain weight file.
func IsONNX(path string) bool { return strings.EqualFold(filepath.Ext(path), ".onnx") }

// LoadModel reads a model to start from: a cotrain weight file, or an ONNX
// model imported on the fly (ImportONNX) when the name ends in .onnx.
// normalize is --normalize: it sets an imported model's normalisation and
// may be given for a weight file only when the file records none (a file
// from before files recorded it); a file that records one keeps it,
// because the weights were trained for it.
func LoadModel(path, normalize string) (*models.File, error) {
	if IsONNX(path) {
		f, _, err := ImportONNX(path, normalize)
		return f, err
	}
	f, err := models.LoadFile(path)
	if err != nil {
		return nil, err
	}
	if normalize == "" {
		return f, nil
	}
	if n, set, err := f.InputNorm(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	} else if set {
		return nil, fmt.Errorf("--normalize %s: %s already records its input normalisation (%v); the model was trained for it",
			normalize, path, n)
	}
	norm, err := models.ParseNorm(normalize, f.Resolved().Input.C)
	if err != nil {
		return nil, fmt.Errorf("--normalize: %w", err)
	}
	f.Meta = models.WithNorm(f.Meta, norm)
	return f, nil
}

// Retarget fits a model file's head to the data's classes
// (models.Retarget) and, when it had to replace the head, says so on w,
// after prefix ("hub: " for the hub): `cotrain finetune` and the hub
// report it in the same words.
func Retarget(f *models.File, labels []string, r *rand.Rand, w io.Writer, prefix string) (*models.File, error) {
	old := f.Resolved().Classes
	g, changed, err := models.Retarget(f, labels, r)
	if err != nil {
		return nil, err
	}
	if changed {
		fmt.Fprintf(w, "%sthe model's last layer (%d outputs) does not fit the data's %d classes (%s): replaced by a new one, freshly initialised\n",
			prefix, old, len(labels), strings.Join(labels, ", "))
	}
	return g, nil
}

// ErrUsage is wrapped by errors that come from a flag's value: the binaries
// exit 2 on them (each binary's errUsage is this one, so PrepareModel's
// refusals count as theirs).
var ErrUsage = errors.New("usage")

// ModelFlags are the flags that say which model a run trains and on what.
type ModelFlags struct {
	Weights   string  // a weight file or .onnx to fine-tune; "" trains Model from scratch
	Model     string  // a built-in model, when Weights is ""
	Normalize string  // --normalize ("" keeps the file's or the model's default)
	TrainLast string  // --train-last, with Weights
	Width     float64 // --width of a built-in Model (0: its default); refused for a model without one
	Data      string  // --data
	// Holdout is --holdout: the fraction of a single image folder held out
	// to test (LoadData); 0 trains on, and evaluates on, all of it.
	Holdout   float64
	Classes   []int  // --classes: the labels kept (nil: all)
	Seed      uint64 // the run's seed: the initial weights and a replaced head draw from it
	MaxPixels int    // --max-pixels: the largest image read (0: data.DefaultMaxPixels)
	// Window and Stride are --window and --stride, which cut sensor
	// recordings (DataOptions); 0 takes the model's (its input length, its
	// recorded stride) or the defaults.
	Window, Stride int
	// Vocab is --vocab, a vocabulary file for text ("": built from the
	// training text); Context is --context, a new language model's words
	// of context (0: the model's default).
	Vocab   string
	Context int
	Say     string // what the lines told to stderr start with ("hub: ")
}

// Setup is the model a run trains and the data it trains on.
type Setup struct {
	// File names the model and holds its config, its head sized to the
	// data's classes, and (fine-tuned) the file's meta: an imported graph.
	File *models.File
	// Net is built: a fine-tuned one holds the file's weights (a head that
	// did not fit the classes replaced, and said so) and is frozen as
	// TrainLast says; a new one is initialised from Seed.
	Net  *solver.Net
	Norm models.Norm
	Data *Data
}

// PrepareModel makes the model of a training run, the rule `cotrain train`,
// `cotrain finetune` and `hub` share: the data comes first, because its
// classes size the model's head. A new model of sensor windows (input
// C×1×L, har-cnn) is built for the data: C is the recordings' channels and
// L the window, and its normalisation is the training recordings' own
// unless --normalize gives one; a model read from a file keeps its input,
// its normalisation and its recorded stride (a file that records no
// normalisation, such as an imported 1-D ONNX model, gets the data's). A bad
// --normalize or --train-last wraps ErrUsage; an unknown built-in model is
// models.Lookup's error.
func PrepareModel(f ModelFlags, b gpu.Backend, stderr io.Writer) (*Setup, error) {
	rng := rand.New(rand.NewPCG(f.Seed, 0x1217))
	s := &Setup{}
	// A --data that is not there is LoadData's to report, after the
	// model's own flags are checked: kind is then "", no sensor data.
	kind, _ := KindOf(f.Data)
	var err error
	if kind == KindText {
		return prepareText(f, b, rng)
	}
	var cfg models.Config
	fresh := false // a new model of sensor windows, sized to the data
	stride := f.Stride
	if f.Weights != "" {
		if s.File, err = LoadModel(f.Weights, f.Normalize); err != nil {
			return nil, err
		}
		cfg = s.File.Resolved()
		if readsText(s.File) == nil {
			return nil, fmt.Errorf("%w: %s is a language model, which reads text, but --data %s holds %s", ErrUsage, f.Weights, f.Data, kind)
		}
		var set bool
		if s.Norm, set, err = s.File.InputNorm(); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Weights, err)
		}
		if kind.Signals() && !set {
			s.Norm = models.Norm{} // computed on the training recordings
		}
		sig, ok, err := models.SignalsOf(s.File.Meta, cfg.Input.C)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Weights, err)
		}
		if ok && stride == 0 {
			stride = sig.Stride
		}
	} else {
		spec, err := models.Lookup(f.Model)
		if err != nil {
			return nil, err
		}
		if f.Width != 0 && spec.Default.Width == 0 {
			return nil, fmt.Errorf("%w: --width %v: model %s has no width multiplier (mobilenet-v1 and mobilenet-small have one)", ErrUsage, f.Width, f.Model)
		}
		cfg = spec.Resolve(models.Config{Width: f.Width})
		if readsText(&models.File{Model: f.Model, Config: cfg}) == nil {
			return nil, fmt.Errorf("%w: %s is a language model, which reads text (a .txt file or a folder of them), but --data %s holds %s", ErrUsage, f.Model, f.Data, kind)
		}
		fresh = kind.Signals() && cfg.Input.H == 1
		if !fresh {
			if s.Norm, err = models.ParseNorm(f.Normalize, cfg.Input.C); err != nil {
				return nil, fmt.Errorf("%w: --normalize: %v", ErrUsage, err)
			}
		}
		s.File = &models.File{Model: f.Model, Config: cfg}
	}
	o := DataOptions{Input: cfg.Input, Norm: s.Norm, Classes: f.Classes, Holdout: f.Holdout, Seed: f.Seed,
		MaxPixels: f.MaxPixels, Window: f.Window, Stride: stride}
	if fresh {
		o.Input = solver.Shape{}
	}
	if s.Data, err = LoadData(f.Data, o); err != nil {
		return nil, err
	}
	if fresh && f.Normalize != "" {
		// --normalize of a new sensor model: its channels are known now.
		if o.Norm, err = models.ParseNorm(f.Normalize, len(s.Data.Signals.Channels)); err != nil {
			return nil, fmt.Errorf("%w: --normalize: %v", ErrUsage, err)
		}
		if s.Data, err = LoadData(f.Data, o); err != nil {
			return nil, err
		}
	}
	s.Norm = s.Data.Norm
	if fresh {
		c, h, w := s.Data.Train.Shape()
		s.File.Config.Input = solver.Shape{C: c, H: h, W: w}
	}
	if f.Weights == "" {
		s.File.Config.Classes = len(s.Data.Labels)
		if s.Net, err = models.Build(b, s.File.Model, s.File.Config); err != nil {
			return nil, err
		}
		s.Net.InitParams(rng)
		return s, nil
	}
	if s.File, err = Retarget(s.File, s.Data.Labels, rng, stderr, f.Say); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Weights, err)
	}
	if s.Net, err = s.File.Build(b); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Weights, err)
	}
	if err := TrainLast(s.Net, f.TrainLast); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return s, nil
}

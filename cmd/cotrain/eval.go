package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/half"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr, "cotrain eval --weights FILE --data mnist|DIR|FILE.txt [flags]",
		"Evaluates a model on a data set (all of an image folder; MNIST's and a train/test folder's test part) and prints its accuracy and loss; "+
			"a language model on text: its perplexity, beside the best unigram model's on the same words.")
	weights := fs.String("weights", "", "weight file (required)")
	dataSpec := fs.String("data", "mnist", cli.DataUsage+"; its classes must be the model's")
	window := fs.Int("window", 0, "sensor data: window length in time steps (0: the model's input length; another value is refused)")
	stride := fs.Int("stride", 0, "sensor data: steps between window starts (0: the stride the model records, else 64)")
	classes := fs.String("classes", "", `evaluate only on these labels, e.g. "5-9"`)
	batch := fs.Int("batch", 500, "evaluation batch size")
	asJSON := fs.Bool("json", false, "print one JSON line")
	device := fs.String("device", "auto", deviceUsage)
	fp16 := fs.Bool("fp16", false, fp16Usage)
	maxPixels := fs.Int("max-pixels", data.DefaultMaxPixels, cli.MaxPixelsUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *maxPixels < 1 {
		return fmt.Errorf("%w: --max-pixels must be positive", errUsage)
	}
	if *weights == "" {
		return fmt.Errorf("%w: eval needs --weights", errUsage)
	}
	if *batch < 1 {
		return fmt.Errorf("%w: --batch must be positive", errUsage)
	}
	f, net, release, err := loadNet(*weights, *device, *fp16, stderr)
	if err != nil {
		return err
	}
	defer release()
	kind, err := cli.KindOf(*dataSpec)
	if err != nil {
		return err
	}
	lm := models.MetaValue(f.Meta, models.MetaVocab) != ""
	switch {
	case kind == cli.KindText && *classes != "":
		return fmt.Errorf("%w: --classes with text: a language model's classes are its vocabulary's words", errUsage)
	case kind == cli.KindText:
		return evalText(f, net, *weights, *dataSpec, *batch, *asJSON, stdout)
	case lm:
		return fmt.Errorf("%w: %s is a language model, but --data %s holds %s: give it text (a .txt file or a folder of them)", errUsage, *weights, *dataSpec, kind)
	}
	cls, err := cli.ParseClasses(*classes)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	norm, _, err := f.InputNorm()
	if err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	// The input and the classes are checked before any image is decoded:
	// a folder of photos takes a while to load, and a mismatch needs none.
	if err := cli.CheckFit(*dataSpec, net.In); err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	labels, err := cli.DataLabels(*dataSpec)
	if err != nil {
		return err
	}
	if err := cli.CheckClasses(f, labels, *dataSpec); err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	// Evaluation uses all of a folder it is given (holdout 0); MNIST, IDX
	// files and a train/test folder are evaluated on their test part.
	if *stride == 0 {
		sig, _, err := models.SignalsOf(f.Meta, net.In.C)
		if err != nil {
			return fmt.Errorf("%s: %w", *weights, err)
		}
		*stride = sig.Stride // 0 when the model records none: data.DefaultStride
	}
	ds, err := cli.LoadData(*dataSpec, cli.DataOptions{Input: net.In, Norm: norm, Classes: cls, Seed: 1, MaxPixels: *maxPixels,
		Window: *window, Stride: *stride})
	if err != nil {
		return err
	}
	if err := cli.CheckClasses(f, ds.Labels, *dataSpec); err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	acc, loss := solver.NewTrainer(net, nil, nil).Evaluate(ds.Test, *batch)
	if *asJSON {
		return cli.NewEvents(stdout).Emit("done", map[string]any{"test_accuracy": acc, "test_loss": loss,
			"samples": ds.Test.Len(), "split": ds.Split, "model": f.DisplayName()})
	}
	fmt.Fprintf(stdout, "%s on %s: accuracy %.4f, loss %.4f over %d test samples (%s)\n", f.DisplayName(), *dataSpec, acc, loss, ds.Test.Len(), testPart(ds))
	return nil
}

func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("predict", stderr, "cotrain predict --weights FILE [--input] FILE... | --text TEXT... [--json]",
		"Runs a model on images, .npy tensors or (a model of sensor windows) CSV recordings and prints each one's most probable classes; "+
			"a language model on text, the most probable next words.")
	weights := fs.String("weights", "", "weight file (required)")
	var texts multiFlag
	fs.Var(&texts, "text", `a language model: the words it continues (repeatable): the top next words, <unk> never among them (with --json: "next", each entry's "word", "id" and "prob", and the "context" the model read)`)
	var inputs multiFlag
	fs.Var(&inputs, "input", "PNG or JPEG image, .npy float32 NCHW tensor (N×C×L for a model of sensor windows) used as is, "+
		"or .csv recording (a model of sensor windows: cut into its windows, whose probabilities are averaged) "+
		"(repeatable; more may be given without --input, before or after the flags)")
	top := fs.Int("top", 5, "how many classes to show")
	asJSON := fs.Bool("json", false, `one JSON object per input with "logits" and "top5" (each entry's class number, "label" and "prob")`)
	device := fs.String("device", "auto", deviceUsage)
	fp16 := fs.Bool("fp16", false, fp16Usage)
	maxPixels := fs.Int("max-pixels", data.DefaultMaxPixels, cli.MaxPixelsUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *maxPixels < 1 {
		return fmt.Errorf("%w: --max-pixels must be positive", errUsage)
	}
	inputs = append(inputs, fs.Args()...)
	if *weights == "" || (len(inputs) == 0) == (len(texts) == 0) {
		return fmt.Errorf("%w: predict needs --weights and at least one --input, or at least one --text", errUsage)
	}
	f, net, release, err := loadNet(*weights, *device, *fp16, stderr)
	if err != nil {
		return err
	}
	defer release()
	if len(texts) > 0 {
		return predictText(f, net, *weights, texts, *top, *asJSON, stdout)
	}
	if models.MetaValue(f.Meta, models.MetaVocab) != "" {
		return fmt.Errorf("%w: %s is a language model: give it --text", errUsage, *weights)
	}
	labels, _, err := f.Labels()
	if err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	norm, _, err := f.InputNorm()
	if err != nil {
		return fmt.Errorf("%s: %w", *weights, err)
	}
	tr := solver.NewTrainer(net, nil, nil)
	ev := cli.NewEvents(stdout)
	classes := net.Out.Size()
	for _, path := range inputs {
		if isRecording(path) {
			r, err := predictRecording(tr, f, path, norm)
			if err != nil {
				return err
			}
			if err := r.print(stdout, ev, *asJSON, *top, labels); err != nil {
				return err
			}
			continue
		}
		x, n, err := loadInput(path, net.In, norm, *maxPixels)
		if err != nil {
			return err
		}
		logits := make([]float32, n*classes)
		net.B.Download(logits, tr.Logits(x, n))
		for i := 0; i < n; i++ {
			row := logits[i*classes : (i+1)*classes]
			best := topK(softmax(row), *top, labels)
			name := path
			if n > 1 {
				name = fmt.Sprintf("%s[%d]", path, i)
			}
			if *asJSON {
				if err := ev.Emit("prediction", map[string]any{"input": name, "logits": row, "top5": best}); err != nil {
					return err
				}
				continue
			}
			var parts []string
			for _, b := range best {
				parts = append(parts, fmt.Sprintf("%s (%.3f)", b.Label, b.Prob))
			}
			fmt.Fprintf(stdout, "%s: %s\n", name, strings.Join(parts, ", "))
		}
	}
	return nil
}

// loadInput reads a .npy tensor (n×C×H×W or C×H×W, used as is) or an image
// of at most maxPixels pixels (resized and normalised as the model's inputs
// are: norm).
func loadInput(path string, in solver.Shape, norm models.Norm, maxPixels int) ([]float32, int, error) {
	if strings.EqualFold(filepath.Ext(path), ".npy") {
		fh, err := os.Open(path)
		if err != nil {
			return nil, 0, err
		}
		defer fh.Close()
		x, shape, err := data.ReadNPY(fh)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		if len(x) == 0 || len(x)%in.Size() != 0 {
			return nil, 0, fmt.Errorf("%s: tensor of shape %v does not hold whole %v samples", path, shape, in)
		}
		if err := data.CheckFinite(x, in.C, in.H, in.W); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		return x, len(x) / in.Size(), nil
	}
	opt := data.FolderOptions{C: in.C, H: in.H, W: in.W, Mean: norm.Mean, Std: norm.Std, MaxPixels: maxPixels}
	x, err := data.LoadImage(path, opt)
	if err != nil {
		return nil, 0, err
	}
	return x, 1, nil
}

// classProb is one of predict's top classes: its label number, name and
// probability.
type classProb struct {
	Class int     `json:"class"`
	Label string  `json:"label"`
	Prob  float64 `json:"prob"`
}

// testPart says which part of the data eval measured: all of a folder, or
// the test part of data that comes split.
func testPart(ds *cli.Data) string {
	if ds.Test == ds.Train {
		return ds.Split
	}
	return "the test part of " + ds.Split
}

func softmax(v []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, float64(x))
	}
	out := make([]float64, len(v))
	var s float64
	for i, x := range v {
		out[i] = math.Exp(float64(x) - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// topK returns the k most probable classes of p, named by labels.
func topK(p []float64, k int, labels []string) []classProb {
	out := make([]classProb, len(p))
	for i, v := range p {
		out[i] = classProb{i, labels[i], v}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Prob > out[b].Prob })
	return out[:min(k, len(out))]
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func runModels(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("models", stderr, "cotrain models",
		"Lists the built-in models, with their layers, sizes and the flags that shape them (train --width).")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	for _, name := range models.Names() {
		s, _ := models.Lookup(name)
		fmt.Fprintf(stdout, "%-14s %s\n", name, s.Description)
	}
	return nil
}

// loadNet reads a weight file (or imports an .onnx file), opens the compute device (with half storage
// when fp16 is set) and builds the file's network on it with its weights;
// call release when done.
func loadNet(weights, device string, fp16 bool, stderr io.Writer) (*models.File, *solver.Net, func(), error) {
	f, err := cli.LoadModel(weights, "") // a weight file, or an .onnx imported as cotrain import does
	if err != nil {
		return nil, nil, nil, err
	}
	if fp16 {
		if err := fitsHalf(f); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", weights, err)
		}
	}
	b, release, err := openDeviceWith(device, fp16, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	net, err := f.Build(b)
	if err != nil {
		release()
		return nil, nil, nil, fmt.Errorf("%s: %w", weights, err)
	}
	return f, net, release, nil
}

// fitsHalf checks that every weight and state value of f survives half
// storage: a magnitude of 65520 or more would become infinite.
func fitsHalf(f *models.File) error {
	// A language model's input is token ids, stored as the backend stores
	// everything: half precision holds whole numbers exactly up to 2048.
	if _, nodes, err := models.FileNodes(f); err == nil && len(nodes) > 0 {
		if e, ok := nodes[0].Layer.(*solver.Embedding); ok && e.Vocab > 2048 {
			return fmt.Errorf("--fp16: a language model of %d words reads token ids up to %d, which half precision does not hold exactly (2048 at most): run it without --fp16",
				e.Vocab, e.Vocab-1)
		}
	}
	for _, set := range [][]models.NamedTensor{f.Params, f.State} {
		for _, t := range set {
			for i, v := range t.Data {
				if math.Abs(float64(v)) >= 65520 {
					return fmt.Errorf("--fp16: %s[%d] is %g, beyond half precision's range (±%d): evaluate without --fp16",
						t.Name, i, v, half.MaxFinite)
				}
			}
		}
	}
	return nil
}

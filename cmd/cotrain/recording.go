package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// predictBatch is the most windows of a recording run at once: a day of
// 50 Hz samples is some 67,000 windows, which need not sit on the device
// together.
const predictBatch = 256

// isRecording reports whether a predict input is a CSV recording.
func isRecording(path string) bool { return strings.EqualFold(filepath.Ext(path), ".csv") }

// recordingResult is what predict says of one recording.
type recordingResult struct {
	path    string
	windows int
	// probs is the mean over the windows of each window's class
	// probabilities (soft voting: a window that is unsure weighs less than
	// one that is sure), votes the number of windows whose most probable
	// class each class is.
	probs []float64
	votes []int
}

// predictRecording names the activity of a recording: it is cut into the
// model's windows (its input length, every stride the model records, or
// data.DefaultStride), normalised with norm, run in batches, and the
// windows' class probabilities averaged.
func predictRecording(tr *solver.Trainer, f *models.File, path string, norm models.Norm) (*recordingResult, error) {
	in := tr.Net.In
	if in.H != 1 || in.W < 2 {
		return nil, fmt.Errorf("%w: %s is a recording, but the model takes %dx%dx%d images: give a model of sensor windows (har-cnn, an imported 1-D CNN)",
			errUsage, path, in.C, in.H, in.W)
	}
	sig, _, err := models.SignalsOf(f.Meta, in.C)
	if err != nil {
		return nil, err
	}
	rec, err := data.LoadRecording(path, data.SensorOptions{Window: in.W, Stride: sig.Stride, Mean: norm.Mean, Std: norm.Std})
	if err != nil {
		return nil, err
	}
	if c, _, _ := rec.Shape(); c != in.C {
		return nil, fmt.Errorf("%s has %d channels (%s), the model takes %d", path, c, strings.Join(rec.Channels(), ", "), in.C)
	}
	if sig.Channels != nil && !cli.SameChannels(rec.Channels(), sig.Channels) {
		return nil, fmt.Errorf("%s names its channels %v, the model was trained on %v", path, rec.Channels(), sig.Channels)
	}
	classes := tr.Net.Out.Size()
	r := &recordingResult{path: path, windows: rec.Len(), probs: make([]float64, classes), votes: make([]int, classes)}
	x := make([]float32, min(predictBatch, rec.Len())*in.Size())
	logits := make([]float32, min(predictBatch, rec.Len())*classes)
	for lo := 0; lo < rec.Len(); lo += predictBatch {
		n := min(predictBatch, rec.Len()-lo)
		for i := range n {
			rec.Get(lo+i, x[i*in.Size():(i+1)*in.Size()])
		}
		tr.Net.B.Download(logits[:n*classes], tr.Logits(x[:n*in.Size()], n))
		for i := range n {
			p := softmax(logits[i*classes : (i+1)*classes])
			best := 0
			for k, v := range p {
				r.probs[k] += v / float64(rec.Len())
				if v > p[best] {
					best = k
				}
			}
			r.votes[best]++
		}
	}
	return r, nil
}

// print writes the result: one line "rec.csv: walking (0.912), ... over N
// windows", or with asJSON one "recording" event with the averaged top
// classes, their votes and the window count.
func (r *recordingResult) print(w io.Writer, ev *cli.Events, asJSON bool, top int, labels []string) error {
	best := topK(r.probs, top, labels)
	if asJSON {
		votes := map[string]int{}
		for k, v := range r.votes {
			if v > 0 {
				votes[labels[k]] = v
			}
		}
		return ev.Emit("recording", map[string]any{"input": r.path, "activity": best[0].Label, "windows": r.windows,
			"top5": best, "votes": votes, "aggregate": "mean of the windows' probabilities"})
	}
	var parts []string
	for _, b := range best {
		parts = append(parts, fmt.Sprintf("%s (%.3f)", b.Label, b.Prob))
	}
	_, err := fmt.Fprintf(w, "%s: %s, mean over %d windows (%d of them vote %s)\n", r.path, strings.Join(parts, ", "),
		r.windows, r.votes[best[0].Class], best[0].Label)
	return err
}

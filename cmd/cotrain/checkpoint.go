package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/cotrain/cotrain/cmd/internal/cli"
	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// A train checkpoint lets `cotrain train` and `cotrain finetune` continue
// after an interruption and end with the bits an uninterrupted run ends
// with. Everything the rest of a run depends on is in it:
//
//   - weights, batch-norm statistics and the optimizer's buffers and step
//     count: an ordinary weight file (models.Snapshot), as the hub's
//     checkpoints are (cmd/hub/checkpoint.go);
//   - the trainer's iteration, which is the schedule's input (the schedule
//     itself is rebuilt from the flags, which must match);
//   - the data order's position: the loader's epoch and position in it
//     (data.Loader.Seek rebuilds the epoch's permutation from the seed);
//   - the dropout generator's state (a PCG, math/rand/v2);
//   - the smoothed loss the progress shows, and, in a side file written
//     first, the loss curve for the plot.
//
// Both files are written atomically: models.SaveFile writes a temporary
// file in the same folder, fsyncs it, renames it over the old one and
// syncs the folder; models.WriteFileAtomic does the same for the curve. A process
// killed at any moment leaves the previous checkpoint or the new one,
// never half of one. The curve is written before the checkpoint, so the
// curve on disk always covers at least the checkpoint's iterations.
//
// A resume must be the same run: the flags that shape the result are kept
// in the checkpoint's meta (flag.NAME) and compared, as are the number of
// training samples and the starting weight file's SHA-256. Flags that do
// not change the bits (--out, --json, --eval-batch, --checkpoint-every,
// --max-pixels, --cache-prefix, --device) may differ; a different --device continues the run but may
// round differently, so bit-identical results need the same device.
const (
	trainCheckpointName = "train.ckpt"
	trainCurveName      = "train.ckpt.loss"
	trainCheckpointKind = "train-checkpoint"
)

// ignoredFields are the trainConfig fields that do not change a run's
// bits; every other field is part of a checkpoint's fingerprint, so that a
// flag added later is checked without touching this file.
var ignoredFields = map[string]bool{
	"out": true, "json": true, "device": true, "evalBatch": true,
	"checkpointEvery": true, "resume": true, "maxPixels": true,
	"cachePrefix":  true, // the prefix cache keeps the bits (TestFinetuneCachePrefix)
	"memoryBudget": true, // recomputation gives the same bits
	"weights":      true, // the path may move; its content's hash is compared
}

// flagNames maps trainConfig fields whose flag is not their name in
// kebab case.
var flagNames = map[string]string{"dataSpec": "data"}

// flagName returns the command-line name of trainConfig's field.
func flagName(field string) string {
	if n, ok := flagNames[field]; ok {
		return n
	}
	var b strings.Builder
	for _, r := range field {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fingerprint returns the checkpoint meta that identifies run c: every
// field of trainConfig but the ignored ones, with extra (derived values
// such as the step count) after them.
func fingerprint(c trainConfig, extra ...[2]string) [][2]string {
	var out [][2]string
	v, t := reflect.ValueOf(c), reflect.TypeOf(c)
	for i := range t.NumField() {
		name := t.Field(i).Name
		if ignoredFields[name] {
			continue
		}
		out = append(out, [2]string{"flag." + flagName(name), fmt.Sprint(v.Field(i))})
	}
	return append(out, extra...)
}

// checkpointer saves and restores the state of one train or finetune run.
type checkpointer struct {
	dir   string
	model string
	mcfg  models.Config
	id    [][2]string // fingerprint meta
	tr    *solver.Trainer
	load  *data.Loader
	drop  *rand.PCG // the dropout generator (solver.Net.SetRand)
}

// newCheckpointer returns the checkpointer of run c, whose state lives in
// tr, loader and drop, in c.out. total is the run's step count and
// samples its number of training samples: a resume with other data or
// another length is refused.
func newCheckpointer(c trainConfig, model string, mcfg models.Config, tr *solver.Trainer, loader *data.Loader,
	drop *rand.PCG, total, samples int) (*checkpointer, error) {
	extra := [][2]string{{"steps", strconv.Itoa(total)}, {"train_samples", strconv.Itoa(samples)}}
	if c.weights != "" {
		sum, err := cli.FileSHA256(c.weights)
		if err != nil {
			return nil, err
		}
		extra = append(extra, [2]string{"weights_sha256", sum})
	}
	return &checkpointer{dir: c.out, model: model, mcfg: mcfg, id: fingerprint(c, extra...),
		tr: tr, load: loader, drop: drop}, nil
}

func (k *checkpointer) path() string      { return filepath.Join(k.dir, trainCheckpointName) }
func (k *checkpointer) curvePath() string { return filepath.Join(k.dir, trainCurveName) }

// save writes the run's state after k.tr.Iter steps; smooth is the
// smoothed loss and curve the loss of every step so far.
func (k *checkpointer) save(smooth float64, curve []float64) error {
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	buf := encodeCurve(curve)
	if err := models.WriteFileAtomic(k.curvePath(), func(w io.Writer) error { _, err := w.Write(buf); return err }); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	rng, err := k.drop.MarshalBinary()
	if err != nil {
		return fmt.Errorf("checkpoint: dropout generator: %w", err)
	}
	f := models.Snapshot(k.model, k.mcfg, k.tr.Net, k.tr.Opt)
	f.Meta = append([][2]string{
		{"kind", trainCheckpointKind},
		{"iteration", strconv.Itoa(k.tr.Iter)},
		{"epoch", strconv.Itoa(k.load.Epoch())},
		{"pos", strconv.Itoa(k.load.Pos())},
		{"rng.dropout", hex.EncodeToString(rng)},
		{"loss.smooth", strconv.FormatFloat(smooth, 'g', -1, 64)},
	}, k.id...)
	if err := models.SaveFile(k.path(), f); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// restore loads the checkpoint into the trainer, the loader and the
// dropout generator, and returns the smoothed loss and the loss curve
// (nil, with a note in warn, when the curve's file is gone). It refuses,
// naming the file and the flag, a checkpoint of another run; on error
// nothing has been changed.
func (k *checkpointer) restore(total int) (smooth float64, curve []float64, warn string, err error) {
	path := k.path()
	f, err := models.LoadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, "", fmt.Errorf("--resume: no checkpoint %s (run without --resume to start, with the same --out)", path)
	}
	if err != nil {
		return 0, nil, "", fmt.Errorf("--resume: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--resume: %s: "+format, append([]any{path}, args...)...)
	}
	if kind := f.MetaValue("kind"); kind != trainCheckpointKind {
		return 0, nil, "", bad("not a train checkpoint (kind %q)", kind)
	}
	if err := f.Check(k.model); err != nil {
		return 0, nil, "", bad("%w", err)
	}
	for _, kv := range k.id {
		if got := f.MetaValue(kv[0]); got != kv[1] {
			name := kv[0]
			if flag, ok := strings.CutPrefix(name, "flag."); ok {
				name = "--" + flag
			}
			return 0, nil, "", bad("written with %s %q, this run has %q: resume with the run's flags, or start over without --resume",
				name, got, kv[1])
		}
	}
	num := func(key string, lo, hi int) (int, error) {
		n, err := strconv.Atoi(f.MetaValue(key))
		if err != nil || n < lo || n > hi {
			return 0, bad("%s %q, want a count in [%d, %d]", key, f.MetaValue(key), lo, hi)
		}
		return n, nil
	}
	iter, err := num("iteration", 0, total)
	if err != nil {
		return 0, nil, "", err
	}
	epoch, err := num("epoch", 0, math.MaxInt32)
	if err != nil {
		return 0, nil, "", err
	}
	pos, err := num("pos", 0, k.load.Len()-1)
	if err != nil {
		return 0, nil, "", err
	}
	rng, err := hex.DecodeString(f.MetaValue("rng.dropout"))
	if err != nil {
		return 0, nil, "", bad("dropout generator state: %v", err)
	}
	var drop rand.PCG
	if err := drop.UnmarshalBinary(rng); err != nil {
		return 0, nil, "", bad("dropout generator state: %v", err)
	}
	smooth, err = strconv.ParseFloat(f.MetaValue("loss.smooth"), 64)
	if err != nil {
		return 0, nil, "", bad("smoothed loss %q: %v", f.MetaValue("loss.smooth"), err)
	}
	if f.Optimizer == "" {
		return 0, nil, "", bad("no optimizer state")
	}
	if err := f.Apply(k.tr.Net, k.tr.Opt); err != nil {
		return 0, nil, "", bad("%w", err)
	}
	k.tr.Iter = iter
	k.load.Seek(epoch, pos)
	*k.drop = drop
	// A process killed while writing leaves its temporary files behind.
	for _, name := range []string{trainCheckpointName, trainCurveName} {
		stale, _ := filepath.Glob(filepath.Join(k.dir, "."+name+".tmp*"))
		for _, p := range stale {
			os.Remove(p)
		}
	}

	// The curve was written before the checkpoint, so it is at least as
	// long; a shorter, missing or damaged one only costs the plot its
	// beginning, and is dropped with a warning.
	curve, err = readCurve(k.curvePath(), iter, total)
	if err != nil {
		return smooth, nil, fmt.Sprintf("the loss curve of the first %d steps is dropped (%v); the plot starts at step %d",
			iter, err, iter+1), nil
	}
	return smooth, curve[:iter], "", nil
}

// The loss curve's side file: curveMagic, the number of values (uint64),
// the values (float64), all little-endian, then the IEEE CRC-32 of
// everything before it. The checksum makes a damaged file (a flipped
// byte, another program's file) fail to read instead of plotting
// garbage, and the count bounds what is read.
const curveMagic = "CTLOSS01"

func encodeCurve(curve []float64) []byte {
	buf := make([]byte, 0, len(curveMagic)+8+8*len(curve)+4)
	buf = append(buf, curveMagic...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(curve)))
	for _, y := range curve {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(y))
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.ChecksumIEEE(buf))
}

// readCurve reads the curve at path, which must hold at least min values
// and at most max (the run's steps): no more than such a file's bytes are
// read, whatever its size.
func readCurve(path string, min, max int) ([]float64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	limit := int64(len(curveMagic)) + 8 + 8*int64(max) + 4
	buf, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	head := len(curveMagic) + 8
	if len(buf) < head+4 || string(buf[:len(curveMagic)]) != curveMagic {
		return nil, fmt.Errorf("%s: not a loss curve", path)
	}
	if int64(len(buf)) > limit {
		return nil, fmt.Errorf("%s: longer than a curve of %d steps", path, max)
	}
	n := binary.LittleEndian.Uint64(buf[len(curveMagic):])
	if n < uint64(min) || n > uint64(max) || uint64(len(buf)) != uint64(head)+8*n+4 {
		return nil, fmt.Errorf("%s: %d bytes for %d values, want %d to %d values", path, len(buf), n, min, max)
	}
	body := buf[:len(buf)-4]
	if got, want := binary.LittleEndian.Uint32(buf[len(body):]), crc32.ChecksumIEEE(body); got != want {
		return nil, fmt.Errorf("%s: checksum %08x, content sums to %08x", path, got, want)
	}
	curve := make([]float64, n)
	for i := range curve {
		curve[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[head+8*i:]))
	}
	return curve, nil
}

// remove deletes the checkpoint once the run's weights are saved: a
// finished run has nothing to resume.
func (k *checkpointer) remove() {
	os.Remove(k.path())
	os.Remove(k.curvePath())
}

// signalError is the cause (context.Cause) of a context that a signal
// ended.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "received " + e.sig.String() }

// signalContext returns a context that SIGINT or SIGTERM cancels with a
// *signalError as its cause, and a function that stops listening.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&signalError{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interruptedError is what train returns when a signal stopped it after
// the checkpoint was saved.
type interruptedError struct {
	iter int
	path string
	sig  os.Signal // nil when the context ended for another reason
}

func (e *interruptedError) Error() string {
	why := "interrupted"
	if e.sig != nil {
		why = e.sig.String()
	}
	return fmt.Sprintf("%s at step %d: checkpoint %s saved; continue with the same flags and --resume", why, e.iter, e.path)
}

// exitCode is what the shell reports for a process the signal killed,
// 128 + its number: 130 for SIGINT (Ctrl-C), 143 for SIGTERM.
func (e *interruptedError) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// interrupted returns the interruptedError for a context that ended.
func interrupted(ctx context.Context, iter int, path string) *interruptedError {
	e := &interruptedError{iter: iter, path: path}
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		e.sig = se.sig
	}
	return e
}

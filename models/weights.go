package models

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/solver"
)

// The weight file layout (all integers little-endian):
//
//	magic    8 bytes  "COTRAINW"
//	version  uint32   1 or 2 (FormatVersion), the lowest that holds the file
//	body              strings are uint32 length + UTF-8 bytes: at most
//	                  64 KiB each in version 1, 64 MiB in version 2
//	  model name
//	  config: uint32 count, then key, value strings
//	  meta:   uint32 count, then key, value strings (iteration, epoch, ...)
//	  3 tensor groups, params, state, optimizer: uint32 count, then per tensor
//	    name, uint32 ndims, ndims × uint32 dims, prod(dims) × float32
//	  optimizer name, uint64 optimizer steps
//	crc32    uint32   IEEE CRC of everything from magic to the end of the body
//
// The CRC makes a corrupted file (a flipped byte, not only a short one) fail
// to load instead of loading wrong weights.
const (
	magic = "COTRAINW"
	// FormatVersion is the newest version this cotrain writes and reads.
	// Version 2 lifts version 1's 64 KiB limit on a string (maxString) to
	// 64 MiB (maxLongString), for graph descriptions of large models
	// (DenseNet-121's is 469 KB); Write writes version 1 when every string
	// fits it, so that older cotrains read what they can, and Read reads
	// both.
	FormatVersion = 2
	maxString     = 1 << 16
	maxLongString = 64 << 20
	maxCount      = 1 << 16
)

// Weight file errors; the returned errors wrap these and say more.
var (
	ErrNotWeights    = errors.New("models: not a cotrain weight file")
	ErrNewerVersion  = errors.New("models: weight file from a newer cotrain")
	ErrTruncated     = errors.New("models: weight file truncated")
	ErrCorrupt       = errors.New("models: weight file corrupt")
	ErrModelMismatch = errors.New("models: weight file does not fit the model")
	// ErrTooLarge: a tensor larger than this build can address (over 2 GiB
	// on a 32-bit platform); the file may be fine for a 64-bit one.
	ErrTooLarge = errors.New("models: tensor too large for this platform")
)

// NamedTensor is a tensor in a weight file.
type NamedTensor struct {
	Name string
	Dims []int
	Data []float32
}

// File is the content of a weight file.
type File struct {
	Model     string
	Config    Config
	Meta      [][2]string
	Params    []NamedTensor
	State     []NamedTensor
	Optimizer string        // "" when no optimizer state is saved
	OptSteps  int           // optimizer steps taken
	OptState  []NamedTensor // one per optimizer buffer, each as long as all params
}

// MetaValue returns the meta value for key, or "".
func (f *File) MetaValue(key string) string {
	for _, kv := range f.Meta {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// Snapshot copies a network's weights and state (and the optimizer's, when
// opt is not nil) into a File.
func Snapshot(model string, c Config, net *solver.Net, opt solver.Optimizer) *File {
	f := &File{Model: model, Config: c}
	params := make([]float32, net.Params.Len())
	net.B.Download(params, net.Params)
	for _, t := range net.Tensors() {
		f.Params = append(f.Params, NamedTensor{t.Name, t.Dims, params[t.Off : t.Off+t.Spec.Size()]})
	}
	state := make([]float32, net.State.Len())
	net.B.Download(state, net.State)
	for _, t := range net.StateTensors() {
		f.State = append(f.State, NamedTensor{t.Name, t.Dims, state[t.Off : t.Off+t.Spec.Size()]})
	}
	if opt != nil {
		bufs, steps := opt.State()
		f.Optimizer, f.OptSteps = opt.Name(), steps
		for _, name := range sortedKeys(bufs) {
			v := make([]float32, bufs[name].Len())
			net.B.Download(v, bufs[name])
			f.OptState = append(f.OptState, NamedTensor{name, []int{len(v)}, v})
		}
	}
	return f
}

// Apply loads the file's weights and state into net (and the optimizer state
// into opt, when opt is not nil and the file has state for an optimizer of
// the same kind). Every tensor is checked first: on error net is untouched.
func (f *File) Apply(net *solver.Net, opt solver.Optimizer) error {
	params, err := flatten("parameter", f.Params, net.Tensors(), net.Params.Len())
	if err != nil {
		return err
	}
	state, err := flatten("state", f.State, net.StateTensors(), net.State.Len())
	if err != nil {
		return err
	}
	var bufs map[string]any
	if opt != nil && f.Optimizer != "" {
		if f.Optimizer != opt.Name() {
			return fmt.Errorf("%w: optimizer state is %s, run uses %s", ErrModelMismatch, f.Optimizer, opt.Name())
		}
		have, _ := opt.State()
		bufs = map[string]any{}
		for _, t := range f.OptState {
			b, ok := have[t.Name]
			if !ok || b.Len() != len(t.Data) {
				return fmt.Errorf("%w: optimizer tensor %s of %d elements", ErrModelMismatch, t.Name, len(t.Data))
			}
			bufs[t.Name] = t.Data
		}
	}
	net.B.Upload(net.Params, params)
	net.B.Upload(net.State, state)
	net.ParamsChanged()
	if bufs != nil {
		have, _ := opt.State()
		for name, v := range bufs {
			net.B.Upload(have[name], v.([]float32))
		}
		opt.SetSteps(f.OptSteps)
	}
	return nil
}

// flatten checks tensors against the network's table and lays them out flat.
func flatten(what string, got []NamedTensor, want []solver.Tensor, n int) ([]float32, error) {
	if err := checkTensors(what, got, want); err != nil {
		return nil, err
	}
	flat := make([]float32, n)
	for i, g := range got {
		copy(flat[want[i].Off:], g.Data)
	}
	return flat, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Write encodes f to w.
func Write(w io.Writer, f *File) error {
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw, crc: crc32.NewIEEE()}
	version, err := fileVersion(f)
	if err != nil {
		return err
	}
	e.raw([]byte(magic))
	e.u32(version)
	e.str(f.Model)
	e.pairs(f.Config.Pairs())
	e.pairs(f.Meta)
	for _, g := range [][]NamedTensor{f.Params, f.State, f.OptState} {
		e.u32(uint32(len(g)))
		for _, t := range g {
			e.str(t.Name)
			e.u32(uint32(len(t.Dims)))
			for _, d := range t.Dims {
				e.u32(uint32(d))
			}
			e.floats(t.Data)
		}
	}
	e.str(f.Optimizer)
	e.u64(uint64(f.OptSteps))
	sum := e.crc.Sum32()
	e.crc = nil
	e.u32(sum)
	if e.err != nil {
		return fmt.Errorf("models: write weights: %w", e.err)
	}
	return bw.Flush()
}

// fileVersion returns the lowest format version that holds f's strings, or
// an error naming a string too long for any.
func fileVersion(f *File) (uint32, error) {
	strs := []string{f.Model, f.Optimizer}
	for _, kv := range append(f.Config.Pairs(), f.Meta...) {
		strs = append(strs, kv[0], kv[1])
	}
	for _, g := range [][]NamedTensor{f.Params, f.State, f.OptState} {
		for _, t := range g {
			strs = append(strs, t.Name)
		}
	}
	version := uint32(1)
	for _, s := range strs {
		switch {
		case len(s) > maxLongString:
			return 0, fmt.Errorf("models: write weights: a string of %d bytes (%.20q...), at most %d", len(s), s, maxLongString)
		case len(s) > maxString:
			version = 2
		}
	}
	return version, nil
}

type encoder struct {
	w   io.Writer
	crc hash.Hash32
	err error
	buf [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err != nil {
		return
	}
	if e.crc != nil {
		e.crc.Write(p)
	}
	_, e.err = e.w.Write(p)
}

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:4], v); e.raw(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:8], v); e.raw(e.buf[:8]) }
func (e *encoder) str(s string) { e.u32(uint32(len(s))); e.raw([]byte(s)) }

func (e *encoder) pairs(kv [][2]string) {
	e.u32(uint32(len(kv)))
	for _, p := range kv {
		e.str(p[0])
		e.str(p[1])
	}
}

func (e *encoder) floats(v []float32) {
	var chunk [4096]byte
	for len(v) > 0 {
		n := min(len(v), len(chunk)/4)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint32(chunk[4*i:], math.Float32bits(x))
		}
		e.raw(chunk[:4*n])
		v = v[n:]
	}
}

// Read decodes a weight file. It refuses, with an error wrapping
// ErrNotWeights, ErrNewerVersion, ErrTruncated or ErrCorrupt, anything that is
// not a complete, intact file of a version it knows.
func Read(r io.Reader) (*File, error) {
	d := &decoder{r: bufio.NewReader(r), crc: crc32.NewIEEE()}
	var m [8]byte
	d.raw(m[:])
	if d.err != nil || string(m[:]) != magic {
		if errors.Is(d.err, ErrTruncated) {
			return nil, fmt.Errorf("%w: shorter than its 8-byte magic", ErrNotWeights)
		}
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrNotWeights, m[:], magic)
	}
	v := d.u32()
	if d.err == nil && v > FormatVersion {
		return nil, fmt.Errorf("%w: format version %d, this cotrain reads up to %d", ErrNewerVersion, v, FormatVersion)
	} else if d.err == nil && v == 0 {
		return nil, fmt.Errorf("%w: format version 0", ErrCorrupt)
	}
	d.version, d.maxStr = v, maxString
	if v >= 2 {
		d.maxStr = maxLongString
	}
	f := &File{Model: d.str()}
	cfg := d.pairs()
	f.Meta = d.pairs()
	groups := [3]*[]NamedTensor{&f.Params, &f.State, &f.OptState}
	for _, g := range groups {
		n := d.count("tensor")
		for i := 0; i < n && d.err == nil; i++ {
			t := NamedTensor{Name: d.str()}
			nd := d.count("dimension")
			// Sizes are counted in int64 through internal/limits and
			// checked before they become ints, so that a 32-bit reader
			// cannot overflow on them.
			size := int64(1)
			dims := make([]int64, 0, nd)
			for j := 0; j < nd && d.err == nil; j++ {
				dim := int64(d.u32())
				next, err := limits.Product64("tensor "+t.Name, size, dim)
				if dim <= 0 || err != nil {
					d.fail(fmt.Errorf("%w: tensor %s has dimension %d", ErrCorrupt, t.Name, dim))
					break
				}
				size = next
				dims = append(dims, dim)
			}
			if d.err == nil {
				if _, err := limits.Bytes64("tensor "+t.Name, size, 4); err != nil {
					d.fail(fmt.Errorf("%w: tensor %s of shape %v: %w", ErrTooLarge, t.Name, dims, err))
				}
			}
			if d.err != nil {
				break
			}
			for _, dim := range dims {
				t.Dims = append(t.Dims, int(dim))
			}
			t.Data = d.floats(int(size))
			*g = append(*g, t)
		}
	}
	f.Optimizer = d.str()
	f.OptSteps = int(d.u64())
	want := d.crc.Sum32()
	d.crc = nil
	got := d.u32()
	if d.err != nil {
		return nil, d.err
	}
	if got != want {
		return nil, fmt.Errorf("%w: checksum %08x, content sums to %08x", ErrCorrupt, got, want)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the checksum", ErrCorrupt)
	}
	var err error
	if f.Config, err = ParseConfig(cfg); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return f, nil
}

type decoder struct {
	r       *bufio.Reader
	crc     hash.Hash32
	err     error
	buf     [8]byte
	version uint32
	maxStr  int // the longest string the file's version holds
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) raw(p []byte) {
	if d.err != nil {
		return
	}
	if _, err := io.ReadFull(d.r, p); err != nil {
		d.fail(fmt.Errorf("%w: %v", ErrTruncated, err))
		return
	}
	if d.crc != nil {
		d.crc.Write(p)
	}
}

func (d *decoder) u32() uint32 { d.raw(d.buf[:4]); return binary.LittleEndian.Uint32(d.buf[:4]) }
func (d *decoder) u64() uint64 { d.raw(d.buf[:8]); return binary.LittleEndian.Uint64(d.buf[:8]) }

func (d *decoder) count(what string) int {
	n := d.u32()
	if n > maxCount {
		d.fail(fmt.Errorf("%w: %d %ss", ErrCorrupt, n, what))
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.u32()
	if d.err != nil {
		return ""
	}
	if int64(n) > int64(d.maxStr) {
		d.fail(fmt.Errorf("%w: string of %d bytes (format version %d holds at most %d)", ErrCorrupt, n, d.version, d.maxStr))
		return ""
	}
	// Read in chunks: memory grows with the bytes the file really has, so
	// a truncated file that claims 64 MiB costs no 64 MiB.
	b := make([]byte, 0, min(int(n), maxString))
	for len(b) < int(n) && d.err == nil {
		k := min(int(n)-len(b), maxString)
		b = append(b, make([]byte, k)...)
		d.raw(b[len(b)-k:])
	}
	return string(b)
}

func (d *decoder) pairs() [][2]string {
	n := d.count("pair")
	var out [][2]string
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, [2]string{d.str(), d.str()})
	}
	return out
}

// floats reads n float32 in chunks, so a corrupt size fails at the end of
// the file rather than after allocating gigabytes up front.
func (d *decoder) floats(n int) []float32 {
	var out []float32
	var chunk [4096]byte
	for n > 0 && d.err == nil {
		k := min(n, len(chunk)/4)
		d.raw(chunk[:4*k])
		for i := 0; i < k; i++ {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(chunk[4*i:])))
		}
		n -= k
	}
	return out
}

// SaveFile writes f to path atomically (WriteFileAtomic): a crash leaves
// the old file or the new one, never half of one.
func SaveFile(path string, f *File) error {
	if err := WriteFileAtomic(path, func(w io.Writer) error { return Write(w, f) }); err != nil {
		return fmt.Errorf("models: save %s: %w", path, err)
	}
	return nil
}

// WriteFileAtomic writes what write writes to path atomically: a temporary
// file in the same folder, fsynced, then renamed over path, and the folder
// synced, so a crash leaves the old file or the new one, never half of
// one. SaveFile writes weight files so; the commands write the files that
// go with them (a checkpoint's loss curve) so too.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if dir, derr := os.Open(filepath.Dir(path)); derr == nil {
		dir.Sync() // make the rename itself durable; best effort
		dir.Close()
	}
	return nil
}

// LoadFile reads the weight file at path; errors name the file.
func LoadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && !st.Mode().IsRegular() {
		what := "not a regular file"
		if st.IsDir() {
			what = "a directory"
		}
		return nil, fmt.Errorf("%w: %s is %s", ErrNotWeights, path, what)
	}
	f, err := Read(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Check returns an error wrapping ErrModelMismatch unless f holds model.
func (f *File) Check(model string) error {
	if f.Model != model {
		return fmt.Errorf("%w: file holds model %s, want %s", ErrModelMismatch, f.Model, model)
	}
	return nil
}

// Build makes the file's network on b and loads the weights and state into
// it: a registered model with the file's config, or, for a GraphModel file,
// the layers stored in its Meta (FileNodes). The network's output must have
// as many values as the file's config has classes. The file's tensors are
// compared with the network's layout (Plan) before anything is allocated,
// so a description that asks for more than its weights fill is refused.
func (f *File) Build(b gpu.Backend) (*solver.Net, error) {
	lay, err := f.Plan()
	if err != nil {
		return nil, err
	}
	if err := checkTensors("parameter", f.Params, lay.Params); err != nil {
		return nil, err
	}
	if err := checkTensors("state", f.State, lay.State); err != nil {
		return nil, err
	}
	net, err := f.Net(b)
	if err != nil {
		return nil, err
	}
	if err := f.Apply(net, nil); err != nil {
		return nil, err
	}
	return net, nil
}

// Net makes the file's network on b as Build does, without loading any
// weights (they are zero): f needs only its Model, Config and Meta. It is
// how a worker builds the model a hub describes, after comparing the
// weights that came with the description with Plan.
func (f *File) Net(b gpu.Backend) (*solver.Net, error) {
	if f.Model != GraphModel {
		return Build(b, f.Model, f.Config)
	}
	if _, err := f.Plan(); err != nil {
		return nil, err
	}
	c, nodes, err := FileNodes(f)
	if err != nil {
		return nil, err
	}
	net, err := solver.NewNet(b, c.Input, nodes)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", GraphModel, err)
	}
	return net, nil
}

// Plan returns the layout of the file's network (solver.PlanNet) without
// allocating it: its output, and the parameter and state tensors it will
// hold. Every size in the description goes through internal/limits, and a
// graph's output must have as many values as the config has classes.
func (f *File) Plan() (*solver.Layout, error) {
	c, nodes, err := FileNodes(f)
	if err != nil {
		return nil, err
	}
	lay, err := solver.PlanNet(c.Input, nodes)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", f.Model, err)
	}
	if f.Model == GraphModel && lay.Out.Size() != c.Classes {
		return nil, fmt.Errorf("%w: the graph outputs %v, the file says %d classes", ErrModelMismatch, lay.Out, c.Classes)
	}
	return lay, nil
}

// checkTensors compares a file's tensors with a layout's, names and dims,
// without allocating.
func checkTensors(what string, got []NamedTensor, want []solver.Tensor) error {
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.Name != w.Name || !slices.Equal(g.Dims, w.Dims) {
			return fmt.Errorf("%w: %s %d is %s %v, the model has %s %v", ErrModelMismatch, what, i, g.Name, g.Dims, w.Name, w.Dims)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%w: %d %s tensors, the model has %d", ErrModelMismatch, len(got), what, len(want))
	}
	return nil
}

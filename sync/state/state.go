// Package state moves a training run's model state between a solver.Net and
// the wire: it hashes weights, captures and loads the full state (weights,
// batch-norm statistics, optimizer tensors), encodes the model config, and
// describes the optimizer as session settings so that another node can build
// the same one. The hub and worker cores share it, so both sides of every
// conversion are one piece of code.
//
// Caller's duties:
//  1. Hash the same thing on every node: Hash over the flat parameter vector
//     (NetHash downloads it first).
//  2. Capture on the sender, Load on the receiver; Load checks every length
//     before it writes, so a refused state leaves the net untouched.
//  3. Build a joining node's optimizer with NewOptimizer from the session and
//     the state's optimizer name, then Load the state into it.
package state

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
)

// Errors returned (wrapped) by this package.
var (
	// ErrMismatch means a state does not fit the network or optimizer it is
	// loaded into (a length, a tensor name or the optimizer's kind differ).
	ErrMismatch = errors.New("state: state does not fit the model")
	// ErrNonFinite means a vector holds a NaN or an infinity.
	ErrNonFinite = errors.New("state: non-finite value")
	// ErrUnsupported means an optimizer or schedule cannot be described on
	// the wire, so another node could not rebuild it identically.
	ErrUnsupported = errors.New("state: not describable on the wire")
	// ErrConfig means an encoded model config is malformed.
	ErrConfig = errors.New("state: bad model config")
)

// Hash returns the SHA-256 of params as little-endian float32 bytes. Two
// vectors hash equal exactly when they are bit-identical (so +0 and -0
// differ, and NaNs with different payloads differ): the check is for
// identical replicas, not for numerical closeness.
//
// On a little-endian machine the vector's memory already holds those bytes
// and is hashed in place; elsewhere it is converted through a small buffer.
// The hub hashes its weights every iteration and every worker its own, so
// the conversion (a third of the time next to SHA-256 itself) is worth
// skipping (BenchmarkHash).
func Hash(params []float32) wire.Hash {
	h := sha256.New()
	if littleEndian && len(params) > 0 {
		h.Write(floatBytes(params))
	} else {
		var buf [4096]byte
		for len(params) > 0 {
			n := min(len(params), len(buf)/4)
			for i, v := range params[:n] {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
			}
			h.Write(buf[:4*n])
			params = params[n:]
		}
	}
	var out wire.Hash
	h.Sum(out[:0])
	return out
}

// littleEndian reports whether float32s are stored little-endian here.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// floatBytes returns v's memory as bytes, in the machine's byte order.
func floatBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// NetHash returns the Hash of net's parameters. Parameters in host memory
// (the CPU backend) are hashed where they lie; others are downloaded first.
func NetHash(net *solver.Net) wire.Hash {
	if h, ok := net.Params.(gpu.Host); ok {
		return Hash(h)
	}
	return Hash(Params(net))
}

// Params returns a fresh host copy of net's parameters.
func Params(net *solver.Net) []float32 {
	p := make([]float32, net.Params.Len())
	net.B.Download(p, net.Params)
	return p
}

// CheckFinite returns an error wrapping ErrNonFinite naming the first
// non-finite element of v, or nil.
func CheckFinite(name string, v []float32) error {
	if i := firstNonFinite(v); i >= 0 {
		return fmt.Errorf("%w: %s[%d] = %v", ErrNonFinite, name, i, v[i])
	}
	return nil
}

// firstNonFinite returns the index of v's first NaN or infinity, or -1.
// A float32 is NaN or infinite when its exponent bits are all ones; adding
// one to the lowest exponent bit then carries into the sign bit, and only
// then. So OR-ing (bits&exp)+lsb over a block and testing the sign bit
// tells, with no branch per element, whether the block holds one. The sum
// never carries out of a float's 32 bits (at most 0x80000000), so two
// floats are tested at once in one 64-bit word. It is about five times as
// fast as testing each element with math.IsNaN and math.IsInf
// (BenchmarkCheckFinite), which matters since every push and every Merged
// is checked, on the hub and on every worker.
func firstNonFinite(v []float32) int {
	const exp, lsb, sign = 0x7f800000, 0x00800000, 0x80000000
	const exp2, lsb2, sign2 = exp<<32 | exp, lsb<<32 | lsb, sign<<32 | sign
	const block = 256
	for lo := 0; lo < len(v); lo += block {
		w := v[lo:min(lo+block, len(v))]
		var a0, a1, a2, a3 uint64
		i := 0
		if len(w) >= 8 {
			// Pairs of floats as words, in native order: the two halves
			// are tested alike, so which float is which does not matter.
			b := floatBytes(w)
			for ; i+8 <= len(w); i += 8 {
				q := b[4*i : 4*i+32]
				a0 |= binary.NativeEndian.Uint64(q[0:])&exp2 + lsb2
				a1 |= binary.NativeEndian.Uint64(q[8:])&exp2 + lsb2
				a2 |= binary.NativeEndian.Uint64(q[16:])&exp2 + lsb2
				a3 |= binary.NativeEndian.Uint64(q[24:])&exp2 + lsb2
			}
		}
		for ; i < len(w); i++ {
			a0 |= uint64(math.Float32bits(w[i])&exp + lsb)
		}
		if (a0|a1|a2|a3)&sign2 != 0 {
			for j, x := range w {
				if math.Float32bits(x)&exp == exp {
					return lo + j
				}
			}
		}
	}
	return -1
}

// Capture copies net's weights and state and opt's tensors and step count
// into fresh vectors (the result shares no memory with the net, so it may be
// sent while training goes on). Tensors are sorted by name.
func Capture(net *solver.Net, opt solver.Optimizer) wire.ModelState {
	s := wire.ModelState{
		Weights: Params(net),
		State:   make(wire.Floats, net.State.Len()),
	}
	net.B.Download(s.State, net.State)
	if opt != nil {
		bufs, steps := opt.State()
		s.Optimizer.Name, s.Optimizer.Steps = opt.Name(), int64(steps)
		for name, b := range bufs {
			v := make(wire.Floats, b.Len())
			net.B.Download(v, b)
			s.Optimizer.Tensors = append(s.Optimizer.Tensors, wire.NamedFloats{Name: name, Values: v})
		}
		s.Optimizer.SortTensors()
	}
	return s
}

// Load writes s into net and opt. Every vector is checked (length, finite
// values, optimizer kind and tensor names) before anything is written, so on
// error net and opt are untouched. Every tensor opt has must be present in s:
// a partial optimizer state would leave stale momentum behind.
func Load(net *solver.Net, opt solver.Optimizer, s wire.ModelState) error {
	if err := s.Weights.CheckLen("weights", net.Params.Len()); err != nil {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	if err := s.State.CheckLen("batch-norm state", net.State.Len()); err != nil {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	if err := CheckFinite("weights", s.Weights); err != nil {
		return err
	}
	if err := CheckFinite("batch-norm state", s.State); err != nil {
		return err
	}
	var bufs map[string]gpu.Buffer
	if opt != nil {
		if s.Optimizer.Name != opt.Name() {
			return fmt.Errorf("%w: optimizer state is %q, the node runs %q", ErrMismatch, s.Optimizer.Name, opt.Name())
		}
		if s.Optimizer.Steps < 0 || s.Optimizer.Steps > math.MaxInt32 {
			return fmt.Errorf("%w: optimizer step count %d", ErrMismatch, s.Optimizer.Steps)
		}
		bufs, _ = opt.State()
		if len(s.Optimizer.Tensors) != len(bufs) {
			return fmt.Errorf("%w: %d optimizer tensors, %s has %d", ErrMismatch, len(s.Optimizer.Tensors), opt.Name(), len(bufs))
		}
		for _, t := range s.Optimizer.Tensors {
			b, ok := bufs[t.Name]
			if !ok {
				return fmt.Errorf("%w: %s has no optimizer tensor %q", ErrMismatch, opt.Name(), t.Name)
			}
			if err := t.Values.CheckLen("optimizer tensor "+t.Name, b.Len()); err != nil {
				return fmt.Errorf("%w: %w", ErrMismatch, err)
			}
			if err := CheckFinite("optimizer tensor "+t.Name, t.Values); err != nil {
				return err
			}
		}
	}
	net.B.Upload(net.Params, s.Weights)
	net.B.Upload(net.State, s.State)
	net.ParamsChanged()
	if opt != nil {
		for _, t := range s.Optimizer.Tensors {
			net.B.Upload(bufs[t.Name], t.Values)
		}
		opt.SetSteps(int(s.Optimizer.Steps))
	}
	return nil
}

// EncodeConfig encodes a model config for wire.Welcome.ModelConfig as
// "key=value" lines in models.Config.Pairs order.
func EncodeConfig(c models.Config) []byte {
	var sb strings.Builder
	for _, kv := range c.Pairs() {
		sb.WriteString(kv[0])
		sb.WriteByte('=')
		sb.WriteString(kv[1])
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

// metaPrefix marks a model meta entry among EncodeModel's lines.
const metaPrefix = "meta."

// EncodeModel encodes a model for wire.Welcome.ModelConfig: its config as
// EncodeConfig does, then the meta entries that define it
// (models.DefiningMeta: an imported model's graph, class names, input
// normalisation) as "meta.KEY=VALUE" lines, in order. A hub of a registered
// model without meta sends exactly what EncodeConfig sends. An older worker
// refuses the meta lines as unknown config keys rather than misreading the
// model. A key or value holding a newline is an error wrapping ErrConfig
// (the meta cotrain writes is compact JSON and number lists: it never does).
func EncodeModel(c models.Config, meta [][2]string) ([]byte, error) {
	b := EncodeConfig(c)
	for _, kv := range meta {
		if strings.ContainsAny(kv[0], "=\n") || strings.Contains(kv[1], "\n") {
			return nil, fmt.Errorf("%w: meta %q holds a newline or its key an '='", ErrConfig, kv[0])
		}
		b = append(b, metaPrefix+kv[0]+"="+kv[1]+"\n"...)
	}
	return b, nil
}

// DecodeModel is the inverse of EncodeModel.
func DecodeModel(b []byte) (models.Config, [][2]string, error) {
	var cfg []byte
	var meta [][2]string
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, _ := strings.Cut(line, "="); strings.HasPrefix(k, metaPrefix) {
			meta = append(meta, [2]string{k[len(metaPrefix):], v})
		} else if line != "" {
			cfg = append(cfg, line+"\n"...)
		}
	}
	c, err := DecodeConfig(cfg)
	if err != nil {
		return models.Config{}, nil, err
	}
	return c, meta, nil
}

// DecodeConfig is the inverse of EncodeConfig. Unknown keys are refused (by
// models.ParseConfig), so a config from a newer hub is not silently misread.
func DecodeConfig(b []byte) (models.Config, error) {
	var pairs [][2]string
	for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return models.Config{}, fmt.Errorf("%w: line %q is not key=value", ErrConfig, line)
		}
		pairs = append(pairs, [2]string{k, v})
	}
	c, err := models.ParseConfig(pairs)
	if err != nil {
		return models.Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, nil
}

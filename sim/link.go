package sim

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/cotrain/cotrain/sync/wire"
)

// How messages travel in the simulator. A real transport encodes a message
// when it is sent and the receiver decodes a fresh one: the sender may
// reuse its memory as soon as Send returns, the receiver owns what it got,
// and the frame's length is what the network carries. The simulator keeps
// all three without running the codec on every message: a link queues, in
// send order, a deep copy of each message made at send time (so a sender
// that reuses its buffers cannot reach the receiver's), and the network
// charges the frame's exact length, which wire.Sizer measures without
// building the frame. Copying a lenet-caffe gradient is one memmove; its
// encoding and decoding were two conversions, two allocations and a copy
// of the frame (BenchmarkHandover).
//
// The codec is not left out: the first codecChecks messages of each kind
// in each run, and every codecEvery-th after, also make the round trip
// through wire.Writer and wire.Reader, and what they decode to must equal
// the copy the receiver gets, field for field, nil and empty told apart.
// A field the codec drops or normalises and the copy does not stops the
// run with an error naming it.

// link is one connection between a phone and the hub: a queue in each
// direction. The network delivers in order (network.route), and each
// arrival takes the oldest message queued its way.
type link struct {
	up, down []wire.Message
}

// recv pops the oldest message of q.
func recv(q *[]wire.Message) (wire.Message, error) {
	if len(*q) == 0 {
		return nil, fmt.Errorf("sim: a message arrived that was never sent")
	}
	m := (*q)[0]
	(*q)[0] = nil
	*q = (*q)[1:]
	return m, nil
}

// codecChecks and codecEvery choose the messages that also take the trip
// through the wire codec (see above).
const (
	codecChecks = 2
	codecEvery  = 64
)

// handover returns what the receiver of m gets: a deep copy, as the codec
// would decode it. Some messages are also round-tripped through the codec
// and compared with the copy.
func (r *runner) handover(m wire.Message) (wire.Message, error) {
	c := copyMessage(m)
	n := r.sent[m.Kind()]
	r.sent[m.Kind()]++
	if n < codecChecks || n%codecEvery == 0 {
		if err := r.roundTrip(m, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// roundTrip encodes m, decodes the frame and compares the result with c.
func (r *runner) roundTrip(m, c wire.Message) error {
	r.frame.Reset()
	if err := r.codecW.WriteMessage(m); err != nil {
		return fmt.Errorf("sim: encode %s: %w", m.Kind(), err)
	}
	d, err := r.codecR.ReadMessage(nil)
	if err != nil {
		return fmt.Errorf("sim: decode %s: %w", m.Kind(), err)
	}
	if diff := firstDiff(reflect.ValueOf(d).Elem(), reflect.ValueOf(c).Elem(), m.Kind().String()); diff != "" {
		return fmt.Errorf("%w: a %s decodes to something else than its in-memory copy: %s", ErrInvariant, m.Kind(), diff)
	}
	return nil
}

// firstDiff names the first place where a (decoded) and b (copied), of
// the same type, differ, or returns "". It tells nil from empty, as
// reflect.DeepEqual does, but compares floats bit for bit (a NaN equals
// itself, -0 differs from +0) and vectors of plain values as memory rather
// than element by element through reflection.
func firstDiff(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if d := firstDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Sprintf("%s: decoded %d values (nil %v), copied %d (nil %v)", path, a.Len(), a.IsNil(), b.Len(), b.IsNil())
		}
		if a.Len() > 0 && plain(a.Type().Elem()) {
			n := a.Len() * int(a.Type().Elem().Size())
			x := unsafe.Slice((*byte)(a.UnsafePointer()), n)
			y := unsafe.Slice((*byte)(b.UnsafePointer()), n)
			if !bytes.Equal(x, y) {
				return fmt.Sprintf("%s: the values differ", path)
			}
			return ""
		}
		for i := range a.Len() {
			if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Array:
		for i := range a.Len() {
			if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return fmt.Sprintf("%s: decoded %d entries (nil %v), copied %d (nil %v)", path, a.Len(), a.IsNil(), b.Len(), b.IsNil())
		}
		for it := a.MapRange(); it.Next(); {
			w := b.MapIndex(it.Key())
			if !w.IsValid() {
				return fmt.Sprintf("%s: key %v missing from the copy", path, it.Key())
			}
			if d := firstDiff(it.Value(), w, fmt.Sprintf("%s[%v]", path, it.Key())); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float32, reflect.Float64:
		if math.Float64bits(a.Float()) == math.Float64bits(b.Float()) {
			return ""
		}
	default:
		if a.Equal(b) {
			return ""
		}
	}
	return fmt.Sprintf("%s: decoded %v, copied %v", path, a, b)
}

// copyMessage returns a deep copy of m as a receiver would decode it: the
// header's version set to the protocol's, fields the codec does not carry
// (tagged "-") left zero, and omitempty fields that are empty left zero.
func copyMessage(m wire.Message) wire.Message {
	src := reflect.ValueOf(m).Elem()
	dst := reflect.New(src.Type())
	copyValue(dst.Elem(), src)
	out := dst.Interface().(wire.Message)
	h := out.Head()
	*h = *m.Head()
	h.Version = wire.ProtocolVersion
	return out
}

// copyValue copies src into dst (settable, same type), sharing no memory.
// Messages hold plain data: a pointer, interface, channel or function in
// one is this package's bug to fix here, so it panics.
func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		t := src.Type()
		for i := range src.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("msgpack")
			if tag == "-" {
				continue // not on the wire (the header is set by copyMessage)
			}
			if strings.Contains(tag, ",omitempty") && emptyValue(src.Field(i)) {
				continue
			}
			copyValue(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if plain(src.Type().Elem()) {
			reflect.Copy(s, src)
		} else {
			for i := range src.Len() {
				copyValue(s.Index(i), src.Index(i))
			}
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		mp := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			k := reflect.New(src.Type().Key()).Elem()
			copyValue(k, it.Key())
			v := reflect.New(src.Type().Elem()).Elem()
			copyValue(v, it.Value())
			mp.SetMapIndex(k, v)
		}
		dst.Set(mp)
	case reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		panic(fmt.Sprintf("sim: cannot copy a %s in a message", src.Type()))
	default: // numbers, booleans, strings (immutable)
		dst.Set(src)
	}
}

// plain reports whether values of t hold no references, so that a slice
// of them is copied by one memmove.
func plain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Array:
		return plain(t.Elem())
	}
	return false
}

// emptyValue is msgpack's test for an omitempty field left out: an empty
// slice, map or string, zero numbers and false.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	}
	return v.IsZero()
}

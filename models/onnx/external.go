package onnx

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// externalData reads the bytes of tensors that an ONNX file keeps in other
// files (TensorProto.data_location EXTERNAL), as torch.onnx.export writes
// them by default since PyTorch 2.5 (model.onnx.data beside model.onnx)
// and onnx.save_model(..., save_as_external_data=True) does.
//
// Only files inside the model's own folder are read: a location that is
// absolute, that has a ".." element, or that reaches outside the folder
// through a symbolic link is refused, naming it, because a model file is
// input from anyone and must not make cotrain read /etc/shadow into a
// weight file. The folder is opened as an os.Root, which refuses symbolic
// links that leave it; the explicit checks before it give a clearer
// message. Offsets and lengths are checked against the file's size
// (limits.Range) before anything is allocated.
type externalData struct {
	root  *os.Root // the model's folder; nil when the model came from a reader
	dir   string   // the folder as the caller named it, for messages
	files map[string]*os.File
}

// close closes the data files opened so far.
func (e *externalData) close() {
	if e == nil {
		return
	}
	for _, f := range e.files {
		f.Close()
	}
}

// read returns the want bytes of tensor p from its external file.
func (e *externalData) read(p *onnxpb.TensorProto, want int) ([]byte, error) {
	var loc string
	off, length := int64(0), int64(-1)
	for _, kv := range p.GetExternalData() {
		var err error
		switch kv.GetKey() {
		case "location":
			loc = kv.GetValue()
		case "offset":
			off, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: tensor %q: external data %s %q is not an integer", ErrMalformed, p.GetName(), kv.GetKey(), kv.GetValue())
		}
	}
	if loc == "" {
		return nil, fmt.Errorf("%w: tensor %q stores its data externally but names no location", ErrMalformed, p.GetName())
	}
	if e == nil || e.root == nil {
		return nil, fmt.Errorf("%w: tensor %q stores its data in the external file %q: import the model from its path "+
			"(cotrain import --onnx FILE, onnx.ImportFile), which reads the data files in the model's folder",
			ErrUnsupported, p.GetName(), loc)
	}
	if err := localName(loc); err != nil {
		return nil, fmt.Errorf("%w: tensor %q: external data location %q %v; only files in the model's folder %s are read",
			ErrMalformed, p.GetName(), loc, err, e.dir)
	}
	if length >= 0 && length != int64(want) {
		return nil, fmt.Errorf("%w: tensor %q: external data length %d, its dims and type take %d bytes", ErrMalformed, p.GetName(), length, want)
	}
	f, err := e.open(loc)
	if err != nil {
		// os.Root says "path escapes from parent" for a link that leaves.
		return nil, fmt.Errorf("%w: tensor %q: external data %q does not open within the model's folder %s: %v",
			ErrMalformed, p.GetName(), loc, e.dir, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("onnx: tensor %q: external data %q: %w", p.GetName(), loc, err)
	}
	if err := limits.Range(fmt.Sprintf("tensor %q in %q", p.GetName(), loc), off, int64(want), st.Size()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	buf := make([]byte, want)
	if _, err := f.ReadAt(buf, off); err != nil && !(err == io.EOF && want == 0) {
		return nil, fmt.Errorf("onnx: tensor %q: external data %q: %w", p.GetName(), loc, err)
	}
	return buf, nil
}

// localName refuses a location that is not a plain relative path inside
// the folder: absolute, with a volume, or with a ".." element.
func localName(loc string) error {
	if filepath.IsAbs(loc) || strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, `\`) || filepath.VolumeName(loc) != "" {
		return fmt.Errorf("is an absolute path")
	}
	for _, el := range strings.FieldsFunc(loc, func(r rune) bool { return r == '/' || r == '\\' }) {
		if el == ".." {
			return fmt.Errorf("leaves the folder (..)")
		}
	}
	if !filepath.IsLocal(loc) {
		return fmt.Errorf("is not a local file name")
	}
	return nil
}

// open opens loc once, through the root, and only as a regular file (a
// FIFO or a device would block or never end).
func (e *externalData) open(loc string) (*os.File, error) {
	if f, ok := e.files[loc]; ok {
		return f, nil
	}
	f, err := e.root.Open(loc)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file (%v)", st.Mode().Type())
	}
	if e.files == nil {
		e.files = map[string]*os.File{}
	}
	e.files[loc] = f
	return f, nil
}

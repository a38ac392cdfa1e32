package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cotrain/cotrain/internal/limits"
)

// FolderOptions says how LoadImageFolder shapes and normalises images.
type FolderOptions struct {
	// C is the channel count: 1 converts to grayscale (ITU-R 601 luma,
	// Y = 0.299 R + 0.587 G + 0.114 B, as PIL's "L" mode), 3 keeps RGB.
	C int
	// H and W are the size every image is resized to, as torchvision's
	// Resize((H, W), antialias=True) resizes (bilinear with antialiasing:
	// resizeAA), after the JPEG's EXIF orientation has turned it upright.
	H, W int
	// Mean and Std hold one value per channel on the [0,1] scale; Get writes
	// (x/255 - Mean[c]) / Std[c]. Both empty means 0.5 for every channel,
	// which maps [0,255] onto [-1,1].
	Mean, Std []float32
	// MaxPixels caps the width × height of an image, read from its header
	// before it is decoded, and the size H×W: a larger one is an error
	// wrapping ErrTooLarge. 0 means DefaultMaxPixels. A file is also
	// refused without reading it when it holds more than 4 bytes per
	// allowed pixel (maxImageBytes).
	MaxPixels int
}

// DefaultMaxPixels is the largest image decoded when FolderOptions.MaxPixels
// is 0: 16 megapixels (2^24), a 48-megapixel phone camera's usual binned
// photo (12 MP) with room to spare. Decoding and resizing one takes at most
// about 20 bytes a pixel (the decoded image, then three float32 planes),
// some 340 MB; a PNG that declares 30000×30000 pixels in 875 KB is refused
// from its header. The commands that read images raise it with --max-pixels.
const DefaultMaxPixels = 1 << 24

// maxPixels is o's pixel limit.
func (o FolderOptions) maxPixels() int {
	if o.MaxPixels == 0 {
		return DefaultMaxPixels
	}
	return o.MaxPixels
}

// maxImageBytes is the largest image file read under a pixel limit: 4
// bytes a pixel and 64 KiB of headers, more than any PNG or JPEG of that
// many pixels holds short of uncompressed 16-bit colour.
func maxImageBytes(maxPixels int) int64 { return 4*int64(maxPixels) + 64<<10 }

// validate checks o and returns the per-channel mean and std to use.
func (o FolderOptions) validate() (mean, std []float32, err error) {
	if o.C != 1 && o.C != 3 {
		return nil, nil, errorf(ErrInvalid, "data: folder: C = %d, want 1 (grayscale) or 3 (RGB)", o.C)
	}
	if o.H < 1 || o.W < 1 {
		return nil, nil, errorf(ErrInvalid, "data: folder: size %dx%d, want positive H and W", o.H, o.W)
	}
	if o.MaxPixels < 0 {
		return nil, nil, errorf(ErrInvalid, "data: folder: pixel limit %d, want 0 (the default) or more", o.MaxPixels)
	}
	// The resized images take C×H×W bytes each, and resizing a row
	// H+W weights a pixel: the size must be a sane image's.
	if px, err := limits.Product("image size", o.H, o.W); err != nil || px > o.maxPixels() {
		return nil, nil, errorf(ErrTooLarge, "data: folder: images resized to %dx%d, more than the %d-pixel limit", o.H, o.W, o.maxPixels())
	}
	mean, std = o.Mean, o.Std
	if len(mean) == 0 && len(std) == 0 {
		mean, std = make([]float32, o.C), make([]float32, o.C)
		for i := range mean {
			mean[i], std[i] = 0.5, 0.5
		}
	}
	if len(mean) != o.C || len(std) != o.C {
		return nil, nil, errorf(ErrInvalid, "data: folder: %d means and %d stds, want %d each (or none for 0.5)",
			len(mean), len(std), o.C)
	}
	return mean, std, nil
}

// LoadImageFolder loads dir laid out as one sub-folder per class:
//
//	dir/cat/001.png
//	dir/dog/a/002.jpg
//
// Class i is the i-th sub-folder name in sorted (byte) order; ClassNames
// keeps the names. Files under a class folder, at any depth, must be PNG or
// JPEG (recognised by their first bytes, not their names); anything else,
// and any file directly in dir, is an error naming the file rather than
// being skipped silently. Names starting with '.' (files or folders, such as
// .DS_Store) are skipped. Samples are ordered by class, then by path.
// Transparent pixels are composited over black.
func LoadImageFolder(dir string, opt FolderOptions) (*Images, error) {
	mean, std, err := opt.validate()
	if err != nil {
		return nil, err
	}
	names, err := FolderClasses(dir)
	if err != nil {
		return nil, err
	}
	size := opt.C * opt.H * opt.W
	var pix []uint8
	var labels []int32
	for class, name := range names {
		err := walkClass(dir, name, func(path string) error {
			pix = append(pix, make([]uint8, size)...)
			if err := loadImageFile(pix[len(pix)-size:], path, opt.C, opt.H, opt.W, opt.maxPixels()); err != nil {
				return err
			}
			labels = append(labels, int32(class))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("data: folder: %w", err)
		}
	}
	if len(labels) == 0 {
		return nil, errorf(ErrInvalid, "data: folder: %s holds no images", dir)
	}
	return NewImages(pix, labels, opt.C, opt.H, opt.W, len(names), mean, std, names)
}

// inFolder refuses an entry of an image folder that is not a regular file,
// or a symbolic link that leads out of the folder root (to /etc/passwd, say)
// or to anything but a regular file: a folder of images reads images, and
// only its own. A link within the folder is followed.
// walkClass calls fn with the path of every file under the class folder
// dir/name, at any depth, in path order: names starting with '.' (files or
// folders) are skipped, and a file that is not regular, or a symbolic link
// leading out of dir, is an error (inFolder) before fn sees it. Every
// class-folder loader walks through it, so they skip and refuse alike.
func walkClass(dir, name string, fn func(path string) error) error {
	return filepath.WalkDir(filepath.Join(dir, name), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if err := inFolder(dir, path, d); err != nil {
			return err
		}
		return fn(path)
	})
}

func inFolder(root, path string, d fs.DirEntry) error {
	if d.Type().IsRegular() {
		return nil
	}
	if d.Type()&fs.ModeSymlink == 0 {
		return errorf(ErrInvalid, "%s: not a regular file (%v)", path, d.Type())
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	base, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return errorf(ErrInvalid, "%s: a symbolic link out of the folder %s (not followed)", path, root)
	}
	if st, err := os.Stat(target); err != nil || !st.Mode().IsRegular() {
		return errorf(ErrInvalid, "%s: a symbolic link to something that is not a regular file", path)
	}
	return nil
}

// FolderClasses returns the class names of an image folder laid out as
// LoadImageFolder reads it: its sub-folder names, sorted by bytes, skipping
// names that start with '.'. It reads only the folder itself, not the
// images. A file directly in dir, or no sub-folder at all, is an error.
func FolderClasses(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data: folder: %w", err)
	}
	var names []string
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case e.IsDir():
			names = append(names, e.Name())
		default:
			return nil, errorf(ErrInvalid, "data: folder: %s is not in a class sub-folder",
				filepath.Join(dir, e.Name()))
		}
	}
	if len(names) == 0 {
		return nil, errorf(ErrInvalid, "data: folder: %s has no class sub-folders", dir)
	}
	sort.Strings(names)
	return names, nil
}

// loadImageFile decodes the PNG or JPEG at path into dst (c×h×w bytes):
// turned upright as a JPEG's EXIF orientation says, then resized. The
// file's size and the image's declared width × height are checked against
// maxPixels before it is decoded (ErrTooLarge), so a small file that
// declares a huge image (a PNG bomb) costs no memory.
func loadImageFile(dst []uint8, path string, c, h, w, maxPixels int) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	limit := maxImageBytes(maxPixels)
	raw, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return err
	}
	if int64(len(raw)) > limit {
		return errorf(ErrTooLarge, "%s: a file of more than %d bytes, over the limit for images of %d pixels", path, limit, maxPixels)
	}
	return loadImageBytes(dst, raw, path, c, h, w, maxPixels)
}

// loadImageBytes is loadImageFile on the file's bytes; name names it in
// errors.
func loadImageBytes(dst []uint8, raw []byte, path string, c, h, w, maxPixels int) error {
	cfg, err := decodeConfig(bytes.NewReader(raw))
	if err != nil {
		return &kindError{kind: ErrFormat, msg: path + ": " + err.Error()}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return errorf(ErrFormat, "%s: empty image (%dx%d)", path, cfg.Width, cfg.Height)
	}
	if px, err := limits.Product("image", cfg.Width, cfg.Height); err != nil || px > maxPixels {
		return errorf(ErrTooLarge, "%s: an image of %dx%d pixels, more than the %d-pixel limit", path, cfg.Width, cfg.Height, maxPixels)
	}
	img, err := decodeImage(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return &kindError{kind: ErrFormat, msg: path + ": " + err.Error()}
	}
	if b := img.Bounds(); b.Empty() {
		return errorf(ErrFormat, "%s: empty image", path)
	}
	ib := img.Bounds()
	o := jpegOrientation(raw)
	raw = nil // the planes below are what is kept; let the collector have the file
	planes := toPlanes(img, c)
	img = nil
	planes, iw, ih := orient(planes, ib.Dx(), ib.Dy(), o)
	for ch := range c {
		resizeAA(dst[ch*h*w:(ch+1)*h*w], h, w, planes[ch], ih, iw)
		planes[ch] = nil
	}
	return nil
}

// decodeConfig reads the width, height and colour model from a PNG's or
// JPEG's header, without decoding the pixels.
func decodeConfig(r *bytes.Reader) (image.Config, error) {
	head := make([]byte, len(pngMagic))
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, pngMagic):
		cfg, err := png.DecodeConfig(r)
		if err != nil {
			return cfg, fmt.Errorf("png: %w", err)
		}
		return cfg, nil
	case bytes.HasPrefix(head, jpegMagic):
		cfg, err := jpeg.DecodeConfig(r)
		if err != nil {
			return cfg, fmt.Errorf("jpeg: %w", err)
		}
		return cfg, nil
	}
	return image.Config{}, errors.New("not a PNG or JPEG image (neither magic number)")
}

// Magic prefixes of the two formats read.
var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xff, 0xd8, 0xff}
)

// decodeImage sniffs the format from the first bytes and decodes it. It uses
// the decoders directly rather than image.Decode's global registry.
func decodeImage(r *bufio.Reader) (image.Image, error) {
	head, _ := r.Peek(len(pngMagic))
	switch {
	case bytes.HasPrefix(head, pngMagic):
		img, err := png.Decode(r)
		if err != nil {
			return nil, fmt.Errorf("png: %w", err)
		}
		return img, nil
	case bytes.HasPrefix(head, jpegMagic):
		img, err := jpeg.Decode(r)
		if err != nil {
			return nil, fmt.Errorf("jpeg: %w", err)
		}
		return img, nil
	}
	// Not the bytes themselves: the file may be anything (a link to a
	// secret), and its content is not for a log.
	return nil, errors.New("not a PNG or JPEG image (neither magic number)")
}

// toPlanes converts img to c planes of float32 values in [0,255], row-major
// over img's bounds: c = 1 is luma, c = 3 is R, G, B.
//
// The decoders' own image types (YCbCr from JPEG; RGBA, NRGBA and Gray
// from PNG) are read straight from their pixel arrays, with the same
// colour arithmetic as image.Image.At, whose boxed colour per pixel costs
// more than the decoding of a 12-megapixel photo (BenchmarkToPlanes);
// other types go through At.
func toPlanes(img image.Image, c int) [][]float32 {
	b := img.Bounds()
	n := b.Dx() * b.Dy()
	planes := make([][]float32, c)
	for ch := range planes {
		planes[ch] = make([]float32, n)
	}
	// at returns a pixel as RGBA does: alpha-premultiplied 16-bit values,
	// so a transparent pixel reads as black.
	var at func(x, y int) (r, g, b uint32)
	switch m := img.(type) {
	case *image.YCbCr:
		at = func(x, y int) (r, g, b uint32) {
			yi, ci := m.YOffset(x, y), m.COffset(x, y)
			r, g, b, _ = color.YCbCr{Y: m.Y[yi], Cb: m.Cb[ci], Cr: m.Cr[ci]}.RGBA()
			return
		}
	case *image.RGBA:
		at = func(x, y int) (r, g, b uint32) {
			p := m.Pix[m.PixOffset(x, y):]
			r, g, b, _ = color.RGBA{R: p[0], G: p[1], B: p[2], A: p[3]}.RGBA()
			return
		}
	case *image.NRGBA:
		at = func(x, y int) (r, g, b uint32) {
			p := m.Pix[m.PixOffset(x, y):]
			r, g, b, _ = color.NRGBA{R: p[0], G: p[1], B: p[2], A: p[3]}.RGBA()
			return
		}
	case *image.Gray:
		at = func(x, y int) (r, g, b uint32) {
			r, g, b, _ = color.Gray{Y: m.Pix[m.PixOffset(x, y)]}.RGBA()
			return
		}
	default:
		at = func(x, y int) (r, g, b uint32) {
			r, g, b, _ = img.At(x, y).RGBA()
			return
		}
	}
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl := at(x, y)
			fr, fg, fb := float32(r)/257, float32(g)/257, float32(bl)/257
			if c == 1 {
				planes[0][i] = float32(0.299*fr) + float32(0.587*fg) + float32(0.114*fb) // not fused on any target
			} else {
				planes[0][i], planes[1][i], planes[2][i] = fr, fg, fb
			}
			i++
		}
	}
	return planes
}

package data

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
}

// validate checks o and returns the per-channel mean and std to use.
func (o FolderOptions) validate() (mean, std []float32, err error) {
	if o.C != 1 && o.C != 3 {
		return nil, nil, errorf(ErrInvalid, "data: folder: C = %d, want 1 (grayscale) or 3 (RGB)", o.C)
	}
	if o.H < 1 || o.W < 1 {
		return nil, nil, errorf(ErrInvalid, "data: folder: size %dx%d, want positive H and W", o.H, o.W)
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
		err := filepath.WalkDir(filepath.Join(dir, name), func(path string, d fs.DirEntry, err error) error {
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
			pix = append(pix, make([]uint8, size)...)
			if err := loadImageFile(pix[len(pix)-size:], path, opt.C, opt.H, opt.W); err != nil {
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
// turned upright as a JPEG's EXIF orientation says, then resized.
func loadImageFile(dst []uint8, path string, c, h, w int) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	img, err := decodeImage(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return &kindError{kind: ErrFormat, msg: path + ": " + err.Error()}
	}
	if b := img.Bounds(); b.Empty() {
		return errorf(ErrFormat, "%s: empty image", path)
	}
	ib := img.Bounds()
	planes, iw, ih := orient(toPlanes(img, c), ib.Dx(), ib.Dy(), jpegOrientation(raw))
	for ch := range c {
		resizeAA(dst[ch*h*w:(ch+1)*h*w], h, w, planes[ch], ih, iw)
	}
	return nil
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
	return nil, fmt.Errorf("not a PNG or JPEG image (starts with % x)", head)
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
				planes[0][i] = 0.299*fr + 0.587*fg + 0.114*fb
			} else {
				planes[0][i], planes[1][i], planes[2][i] = fr, fg, fb
			}
			i++
		}
	}
	return planes
}

package data

import "fmt"

// LoadImage reads one PNG or JPEG image, resized and normalised exactly as
// LoadImageFolder would load it with the same options, and returns the
// opt.C×opt.H×opt.W values (CHW). It is what prediction on a single file uses.
func LoadImage(path string, opt FolderOptions) ([]float32, error) {
	mean, std, err := opt.validate()
	if err != nil {
		return nil, err
	}
	pix := make([]uint8, opt.C*opt.H*opt.W)
	if err := loadImageFile(pix, path, opt.C, opt.H, opt.W, opt.maxPixels()); err != nil {
		return nil, fmt.Errorf("data: image: %w", err)
	}
	img, err := NewImages(pix, []int32{0}, opt.C, opt.H, opt.W, 1, mean, std, nil)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(pix))
	img.Get(0, out)
	return out, nil
}

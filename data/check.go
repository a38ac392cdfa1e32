package data

import (
	"fmt"
)

// CheckImageFolder reads and decodes every image of dir, laid out as
// LoadImageFolder reads it, and keeps none of them: it finds a broken or
// truncated file before any work depends on it. A worker calls it before it
// registers, when it does not yet know the model's input size (so it
// cannot load the folder for real): a corrupt photo then stops it with the
// file named, instead of after the run has counted on it.
//
// Every entry is held to LoadImageFolder's rules (regular files, links only
// within the folder) and every image to maxPixels (0: DefaultMaxPixels), read
// from its header first. progress, when not nil, is called after each image
// with how many are done and how many there are. It returns the number of
// images; the error names the first file that does not decode, as
// LoadImageFolder's would.
func CheckImageFolder(dir string, maxPixels int, progress func(done, total int)) (int, error) {
	names, err := FolderClasses(dir)
	if err != nil {
		return 0, err
	}
	var paths []string
	for _, name := range names {
		err := walkClass(dir, name, func(path string) error {
			paths = append(paths, path)
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("data: folder: %w", err)
		}
	}
	if len(paths) == 0 {
		return 0, errorf(ErrInvalid, "data: folder: %s holds no images", dir)
	}
	// Each image is decoded exactly as LoadImageFolder decodes it (the same
	// function, with its checks), into one grayscale pixel: the decoding is
	// the check, the pixel is thrown away.
	limit := FolderOptions{MaxPixels: maxPixels}.maxPixels()
	var px [1]uint8
	for i, path := range paths {
		if err := loadImageFile(px[:], path, 1, 1, 1, limit); err != nil {
			return i, fmt.Errorf("data: folder: %w", err)
		}
		if progress != nil {
			progress(i+1, len(paths))
		}
	}
	return len(paths), nil
}

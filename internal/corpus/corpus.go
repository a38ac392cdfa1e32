// Package corpus holds the real text cotrain's language-model examples,
// tests and simulator scenarios train on: the GNU licences Debian ships in
// /usr/share/common-licenses, copied verbatim (their terms: "Everyone is
// permitted to copy and distribute verbatim copies of this license
// document, but changing it is not allowed"), 8 files, 180 KB, about
// 40,000 words.
//
//	licenses/train/    GPL-2, GPL-3, LGPL-2, LGPL-2.1, GFDL-1.2, GFDL-1.3
//	licenses/heldout/  GPL-1, LGPL-3
//
// The files are also there to be read from disk (the walkthrough in
// docs/text.md gives their paths to cotrain and the hub); this package
// embeds them so that the simulator needs no path.
package corpus

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

//go:embed licenses
var files embed.FS

// Licenses returns the names and texts of the files of one part of the
// licence corpus, "train" or "heldout", sorted by name.
func Licenses(part string) (names, texts []string, err error) {
	dir := path.Join("licenses", part)
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("corpus: licenses %q (want train or heldout): %w", part, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		b, err := fs.ReadFile(files, path.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("corpus: %w", err)
		}
		names, texts = append(names, e.Name()), append(texts, string(b))
	}
	return names, texts, nil
}

package main

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"unicode"
)

// causesFile is the hand-written account of the unmet targets, beside
// BENCHMARKS.md: for each target and flavour not met, a profile of where
// the time goes and why it was not cut. Its sections open with an anchor
// `<a id="SLUG"></a>`, SLUG being check.anchor(); the targets table links
// every unmet cell to its section and names the cells that have none.
const causesFile = "CAUSES.md"

var anchorRe = regexp.MustCompile(`<a id="([^"]+)"></a>`)

// causes is the set of anchors of a causes file.
type causes map[string]bool

// parseCauses returns the anchors of the causes file text md.
func parseCauses(md string) causes {
	cs := causes{}
	for _, m := range anchorRe.FindAllStringSubmatch(md, -1) {
		cs[m[1]] = true
	}
	return cs
}

// loadCauses reads the causes file at path; a missing file has no anchors.
func loadCauses(path string) (causes, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return causes{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCauses(string(b)), nil
}

// anchor names the section of the causes file for the check's target and
// flavour: both lowercased, every run of other than letters and digits
// made one dash. The written-file and /dev/null rows of a target and
// flavour share one section.
func (c check) anchor() string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(c.Target + " " + c.Flavour) {
		if unicode.IsLetter(r) && r < unicode.MaxASCII || unicode.IsDigit(r) {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

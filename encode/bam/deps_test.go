package bam

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoDecoderDependency walks the module's packages that encode/bam
// imports, directly or not (test files left out): none of them is the
// CRAM decoder or one of its codecs, so a BAM writer links none of them.
func TestNoDecoderDependency(t *testing.T) {
	const module = "github.com/cramfs/cramfs/"
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	var walk func(pkg string, from string)
	walk = func(pkg, from string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		if pkg == "decode" || strings.HasPrefix(pkg, "decode/") {
			t.Errorf("encode/bam depends on %s (imported by %s)", pkg, from)
			return
		}
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files (%v)", pkg, err)
		}
		for _, p := range files {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(path, module); ok {
					walk(rest, pkg)
				}
			}
		}
	}
	walk("encode/bam", "")
	if !seen["internal/record"] {
		t.Errorf("encode/bam does not import internal/record: the walk found %v", seen)
	}
}

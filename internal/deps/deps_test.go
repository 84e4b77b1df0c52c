// Package deps_test enforces the package graph of the module (docs/
// layout.md): which project packages each may import, directly, from its
// non-test files.
package deps_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cramfs/cramfs/"

// allowed lists, by package pattern (a path, or a prefix ending in "/..."),
// the project packages it may import (same patterns). A package matches
// the first row whose pattern it matches; every package must match one.
var allowed = []struct {
	pkg     string
	imports []string
}{
	// The command parses flags and wires the service to the process.
	{"cmd/cramfs", []string{"fs", "internal/service", "internal/service/..."}},
	// The serving library builds the service from options.
	{"internal/service", []string{"fs", "engine", "engine/cram", "engine/layout", "engine/source", "engine/states", "cache", "decode", "decode/reference", "internal/service/...", "internal/web"}},
	{"internal/service/...", nil},
	// The FUSE tree owns its interfaces and imports no project package.
	{"fs", nil},
	// The engine schedules the containers of any source; the source
	// contract and the per-file state bound are below it, the CRAM source
	// beside it: the engine never imports the CRAM adapter.
	{"engine", []string{"cache", "engine/layout", "engine/source", "engine/states", "encode/...", "internal/record", "internal/sizehint"}},
	{"engine/source", []string{"encode/bgzf"}},
	{"engine/layout", []string{"engine/source", "encode/bgzf"}},
	{"engine/states", nil},
	{"engine/cram", []string{"engine/source", "engine/states", "decode", "decode/...", "encode/bam", "encode/bgzf", "internal/sizehint"}},
	{"cache", nil},
	// The decoder and encoder are pure and independent of the serving
	// packages; the BAM writer links no CRAM codec (encode/bam/deps_test.go).
	{"decode", []string{"decode/...", "internal/record", "internal/splitmix"}},
	{"decode/...", []string{"decode/...", "internal/record", "internal/splitmix"}},
	{"encode/...", []string{"encode/...", "internal/record"}},
	// Test helpers and tools of the tree.
	{"internal/clitest", []string{"fs", "internal/corpus", "encode/bgzf"}},
	// The HTTP front end, over the tree fs shows.
	{"internal/web", []string{"fs"}},
	{"internal/...", []string{"decode", "decode/...", "encode/...", "internal/..."}},
}

func matches(pattern, pkg string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return strings.HasPrefix(pkg, prefix+"/")
	}
	return pkg == pattern
}

// imports returns the project packages the non-test Go files of each
// package directory below root import, by package path.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (base == "testdata" || base == "tools" || strings.HasPrefix(base, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := path.Dir(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(ip, module); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPackageGraph checks every package's project imports against allowed.
func TestPackageGraph(t *testing.T) {
	graph := imports(t, filepath.Join("..", ".."))
	if len(graph) < 10 {
		t.Fatalf("found only %d packages: %v", len(graph), graph)
	}
	for pkg, imps := range graph {
		i := slices.IndexFunc(allowed, func(r struct {
			pkg     string
			imports []string
		}) bool {
			return matches(r.pkg, pkg)
		})
		if i < 0 {
			t.Errorf("package %s is in no row of the allowed graph: add it", pkg)
			continue
		}
		for _, imp := range imps {
			if !slices.ContainsFunc(allowed[i].imports, func(p string) bool { return matches(p, imp) }) {
				t.Errorf("%s imports %s, which the package graph does not allow it (row %q)", pkg, imp, allowed[i].pkg)
			}
		}
	}
}

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

var updateMan = flag.Bool("update", false, "rewrite the generated parts of docs/cramfs.1.md and README.md")

// manSynopsis is the SYNOPSIS block: one usage line per command.
func manSynopsis() string {
	var b strings.Builder
	b.WriteString("```\n")
	for _, c := range commands {
		b.WriteString(c.synopsis() + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// manOptions is the OPTIONS list of one command, from its flag set.
func manOptions(c command) string {
	var b strings.Builder
	for _, r := range optionRows(c.flagSet(c.make())) {
		fmt.Fprintf(&b, "- `%s`: %s\n", r.forms, r.text)
	}
	return b.String()
}

// generatedBlock matches a generated block: an opening marker comment
// line, the generated text, and the closing marker line.
var generatedBlock = regexp.MustCompile(`(?s)(<!-- (synopsis|options: (\w+))[^\n]*-->\n)(.*?)(<!-- end (?:synopsis|options) -->)`)

// regenerate returns text with every generated block made current, and
// the names of the blocks found.
func regenerate(t *testing.T, text string) (string, []string) {
	t.Helper()
	var found []string
	out := generatedBlock.ReplaceAllStringFunc(text, func(m string) string {
		g := generatedBlock.FindStringSubmatch(m)
		var body string
		switch {
		case g[2] == "synopsis":
			body = manSynopsis()
		default:
			c, ok := findCommand(g[3])
			if !ok {
				t.Errorf("generated block for unknown command %q", g[3])
				return m
			}
			body = manOptions(c)
		}
		found = append(found, g[2])
		return g[1] + body + g[5]
	})
	return out, found
}

// TestManPageCurrent checks that the SYNOPSIS and OPTIONS of
// docs/cramfs.1.md, and the synopsis in README.md, are what the flag
// definitions give: an option added, renamed or given another default
// without the manual fails here. With -update it rewrites them.
func TestManPageCurrent(t *testing.T) {
	root := filepath.Join(corpus.Root())
	want := map[string][]string{
		"docs/cramfs.1.md": {"synopsis"},
		"README.md":        {"synopsis"},
	}
	for _, c := range commands {
		want["docs/cramfs.1.md"] = append(want["docs/cramfs.1.md"], "options: "+c.name)
	}
	for file, blocks := range want {
		p := filepath.Join(root, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, found := regenerate(t, string(b))
		if strings.Join(found, ",") != strings.Join(blocks, ",") {
			t.Errorf("%s: generated blocks %q, want %q", file, found, blocks)
		}
		if file == "docs/cramfs.1.md" {
			checkGenerated(t, filepath.Join(root, "docs/cramfs.1"), toRoff(got))
		}
		checkGenerated(t, p, got)
	}
}

// checkGenerated checks that the file at p holds want, or with -update
// writes it.
func checkGenerated(t *testing.T, p, want string) {
	t.Helper()
	have, err := os.ReadFile(p)
	if err != nil && !(*updateMan && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	if string(have) == want {
		return
	}
	if *updateMan {
		if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is not current with the flag definitions and docs/cramfs.1.md; run `go test ./cmd/cramfs -run TestManPage -update`", p)
}

// TestManPageRenders formats docs/cramfs.1 with groff, as man(1) does:
// no warning, and every section of the markdown page is there.
func TestManPageRenders(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		corpus.Missing(t, "groff (Debian's groff-base): %v", err)
	}
	page := filepath.Join(corpus.Root(), "docs", "cramfs.1")
	cmd := exec.Command(groff, "-man", "-ww", "-Tutf8", "-P-cbou", page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("groff -man -ww %s: %v\n%s", page, err, stderr.String())
	}
	text := string(out)
	for _, want := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "ENVIRONMENT",
		"cramfs mount [OPTIONS] SRC MNT", "--cache-dir DIR"} {
		if !strings.Contains(text, want) {
			t.Errorf("the formatted page lacks %q:\n%s", want, text)
		}
	}
}

// TestHelpListsEachOptionOnce checks every command's help: each visible
// option once, with its short form beside its long one, profiling options
// hidden.
func TestHelpListsEachOptionOnce(t *testing.T) {
	for _, c := range commands {
		_, _, out := runCmd(t, c.name, "--help")
		help := string(out)
		fs := c.flagSet(c.make())
		for _, r := range optionRows(fs) {
			if n := strings.Count(help, r.forms+" "); n != 1 {
				t.Errorf("cramfs %s --help shows %q %d times:\n%s", c.name, r.forms, n, help)
			}
		}
		for _, hidden := range []string{"cpuprofile", "memprofile"} {
			if strings.Contains(help, hidden) {
				t.Errorf("cramfs %s --help shows --%s", c.name, hidden)
			}
		}
	}
	for _, pair := range []string{"-@, --threads N", "-T, --reference FASTA", "-o, --output FILE"} {
		_, _, out := runCmd(t, "convert", "--help")
		if !strings.Contains(string(out), pair) {
			t.Errorf("cramfs convert --help does not show %q", pair)
		}
	}
}

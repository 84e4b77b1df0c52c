package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The roff manual docs/cramfs.1 is generated from docs/cramfs.1.md (see
// TestManPageCurrent), for `man cramfs`: the markdown page stays the one
// people edit, and the two cannot drift apart. toRoff understands the
// markdown that page uses: a "# name(section)" title, "##" and "###"
// headings, paragraphs, "- " lists with indented continuation lines,
// fenced code blocks, inline code, links (their text is kept) and HTML
// comments (dropped).

// toRoff returns the man(7) page of the markdown text md.
func toRoff(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	var para []string // text lines of the paragraph or list item being read
	item := false     // para is a list item
	flush := func() {
		if len(para) == 0 {
			return
		}
		if item {
			b.WriteString(".IP \\(bu 2\n")
		} else {
			b.WriteString(".PP\n")
		}
		b.WriteString(roffText(strings.Join(para, " ")) + "\n")
		para, item = nil, false
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "<!--"):
			continue
		case strings.HasPrefix(l, "```"):
			flush()
			b.WriteString(".PP\n.RS 4\n.nf\n")
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
				b.WriteString(roffLiteral(lines[i]) + "\n")
			}
			b.WriteString(".fi\n.RE\n")
		case strings.HasPrefix(l, "### "):
			flush()
			b.WriteString(".SS " + roffText(l[4:]) + "\n")
		case strings.HasPrefix(l, "## "):
			flush()
			b.WriteString(".SH " + strings.ToUpper(roffText(l[3:])) + "\n")
		case strings.HasPrefix(l, "# "):
			flush()
			name, section, _ := strings.Cut(strings.TrimSuffix(l[2:], ")"), "(")
			fmt.Fprintf(&b, ".TH %s %s \"\" \"cramfs\" \"User Commands\"\n", strings.ToUpper(name), section)
		case strings.TrimSpace(l) == "":
			flush()
		case strings.HasPrefix(l, "- "):
			flush()
			para, item = []string{l[2:]}, true
		default:
			para = append(para, strings.TrimSpace(l))
		}
	}
	flush()
	return b.String()
}

var (
	inlineCode = regexp.MustCompile("`([^`]*)`")
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// roffText turns one paragraph of markdown into roff text: inline code in
// bold, links as their text, roff's special characters escaped.
func roffText(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	parts := inlineCode.Split(s, -1)
	codes := inlineCode.FindAllStringSubmatch(s, -1)
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(roffEscape(p))
		if i < len(codes) {
			b.WriteString(`\fB` + strings.ReplaceAll(roffEscape(codes[i][1]), "-", `\-`) + `\fR`)
		}
	}
	return roffLineStart(b.String())
}

// roffLiteral is one line of a code block: escaped, every hyphen a minus
// sign (commands are copied from man pages).
func roffLiteral(s string) string {
	return roffLineStart(strings.ReplaceAll(roffEscape(s), "-", `\-`))
}

// roffEscape escapes the backslash, roff's escape character.
func roffEscape(s string) string { return strings.ReplaceAll(s, `\`, `\e`) }

// roffLineStart keeps a line that starts with a control character (. or
// ') from being read as a request.
func roffLineStart(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + s
	}
	return s
}

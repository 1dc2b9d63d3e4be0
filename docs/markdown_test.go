package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// page is one Markdown file the tests read, by its path from this
// directory, which is how a failure names it.
type page struct {
	path  string
	lines []string
}

// pages reads README.md, ARCHITECTURE.md and every page under docs/: the
// files a reader follows links between.
func pages(t *testing.T) []page {
	t.Helper()
	paths, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	paths = append([]string{filepath.Join("..", "README.md"), filepath.Join("..", "ARCHITECTURE.md")}, paths...)
	var out []page
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page{path: p, lines: strings.Split(string(b), "\n")})
	}
	if len(out) < 3 {
		t.Fatalf("found %d Markdown files; want README.md, ARCHITECTURE.md and the pages under docs/", len(out))
	}
	return out
}

// outsideFences calls f for every line that is not inside a fenced code
// block (nor a fence itself), with its 1-based number.
func outsideFences(lines []string, f func(n int, line string)) {
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			f(i+1, l)
		}
	}
}

var (
	codeSpan    = regexp.MustCompile("`+[^`]*`+")
	link        = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading     = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkText    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	hasScheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	notSlugRune = func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ' ' && r != '-' && r != '_'
	}
)

// slug is the anchor GitHub gives a heading: its text without markup,
// lower-case, punctuation dropped, each space a hyphen.
func slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = strings.ToLower(text)
	text = strings.Map(func(r rune) rune {
		if notSlugRune(r) {
			return -1
		}
		return r
	}, text)
	return strings.ReplaceAll(text, " ", "-")
}

// anchors are the fragments a link may name in p: its headings' slugs,
// the second of two alike with "-1" as GitHub numbers them, and the ids
// of its HTML anchors.
func anchors(p page) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	outsideFences(p.lines, func(_ int, l string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			return
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	})
	return out
}

// ref is a link as written: its line and its target.
type ref struct {
	line   int
	target string
}

// links are p's links, code spans left out (a route such as `[...](x)` in
// backticks is not a link).
func links(p page) []ref {
	var out []ref
	outsideFences(p.lines, func(n int, l string) {
		for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			out = append(out, ref{n, m[1]})
		}
	})
	return out
}

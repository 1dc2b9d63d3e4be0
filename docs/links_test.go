package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinksResolve: every relative link in README.md, ARCHITECTURE.md and
// docs/ names a file that exists and, with a #fragment, a heading (or an
// HTML anchor) of that file, as GitHub renders them. A page moved or a
// heading reworded breaks a link silently otherwise.
func TestLinksResolve(t *testing.T) {
	all := pages(t)
	byPath := map[string]page{}
	for _, p := range all {
		byPath[filepath.Clean(p.path)] = p
	}
	checked := 0
	for _, p := range all {
		for _, l := range links(p) {
			if hasScheme.MatchString(l.target) {
				continue
			}
			checked++
			if problem := resolve(p, l.target, byPath); problem != "" {
				t.Errorf("%s:%d: link %q: %s", p.path, l.line, l.target, problem)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link parser reads nothing")
	}
}

// resolve says what is wrong with target as a link from p, or "".
func resolve(p page, target string, byPath map[string]page) string {
	file, fragment, _ := strings.Cut(target, "#")
	to := p
	if file != "" {
		path := filepath.Clean(filepath.Join(filepath.Dir(p.path), file))
		if _, err := os.Stat(path); err != nil {
			return "no such file " + path
		}
		if fragment == "" {
			return ""
		}
		var ok bool
		if to, ok = byPath[path]; !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return err.Error()
			}
			to = page{path: path, lines: strings.Split(string(b), "\n")}
		}
	}
	if fragment != "" && !anchors(to)[fragment] {
		return "no heading of " + to.path + " has the anchor #" + fragment
	}
	return ""
}

// TestSlug: the anchors GitHub gives the headings these pages have.
func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Access control": "access-control",
		"`mailroom requeue` and `mailroom force-error`":                     "mailroom-requeue-and-mailroom-force-error",
		"When the daemon will not start: `mailroom log check` and `repair`": "when-the-daemon-will-not-start-mailroom-log-check-and-repair",
		"Covenant's dialect":   "covenants-dialect",
		"Requests in /metrics": "requests-in-metrics",
		"The legacy dialect: `tasks/send` at `/agents/{agent}/rpc`": "the-legacy-dialect-taskssend-at-agentsagentrpc",
		"A2A: every registered agent is an A2A server":              "a2a-every-registered-agent-is-an-a2a-server",
		"retry_stale and [links](x.md)":                             "retry_stale-and-links",
	} {
		if got := slug(text); got != want {
			t.Errorf("slug(%q) = %q, want %q", text, got, want)
		}
	}
}

// Package docs holds the user documentation under docs/; its test checks the
// links between those pages and README.md.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLinks checks that every relative link in README.md and docs/*.md
// points at a file that exists and, when it names a #fragment in a Markdown
// file, at a heading of that file.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(src)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s: %v", page, target, err)
				continue
			}
			if fragment == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(b))[fragment] {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, path, fragment)
			}
		}
	}
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
	codeRE    = regexp.MustCompile("`[^`]*`")
	headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	dropRE    = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// links are the targets of the [text](target) links of a Markdown page,
// outside code blocks and code spans.
func links(src string) []string {
	src = fenceRE.ReplaceAllString(src, "")
	src = codeRE.ReplaceAllString(src, "")
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

// anchors are the fragments GitHub makes of a page's headings: lower case,
// punctuation dropped, spaces made hyphens.
func anchors(src string) map[string]bool {
	src = fenceRE.ReplaceAllString(src, "")
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(src, -1) {
		a := dropRE.ReplaceAllString(strings.ToLower(m[1]), "")
		out[strings.ReplaceAll(a, " ", "-")] = true
	}
	return out
}

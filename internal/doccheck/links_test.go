package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mdLink is an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)

// fence is a fenced code block, whose text is not Markdown.
var fence = regexp.MustCompile("(?s)```.*?```")

// docs are README.md and every Markdown file under docs/ and examples/.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// slug is the anchor GitHub gives a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces made hyphens.
func slug(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && !strings.ContainsRune("×≤≥—–’“”…·→Δ", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors is every heading anchor of a Markdown text, numbered as GitHub
// numbers repeated ones (-1, -2, ...).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		h := regexp.MustCompile("[`*]").ReplaceAllString(m[1], "")
		h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocsLinks holds every relative link of README.md and docs/ to a file
// that exists and, with a #fragment, to a heading of it.
func TestDocsLinks(t *testing.T) {
	for _, bad := range badLinks(t, "../..", docs(t, "../..")) {
		t.Error(bad)
	}
}

// TestDocsLinksCatch plants a missing file and a missing anchor: the check
// must name both, and pass the good links beside them.
func TestDocsLinksCatch(t *testing.T) {
	dir := t.TempDir()
	page := "# A page\n\n## Second part, with `code`\n\n## Second part, with code\n\n" +
		"[ok](#second-part-with-code) [ok](#second-part-with-code-1) [ok](b.md#the-b) [bad](#none) [bad](gone.md)\n"
	os.WriteFile(filepath.Join(dir, "a.md"), []byte(page), 0o644)
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("# The B\n"), 0o644)
	bad := badLinks(t, dir, []string{filepath.Join(dir, "a.md")})
	if len(bad) != 2 || !strings.Contains(bad[0], `"#none"`) || !strings.Contains(bad[1], `"gone.md"`) {
		t.Fatalf("planted two bad links, the check found %q", bad)
	}
}

// badLinks is what is wrong with the links of files (under root).
func badLinks(t *testing.T, root string, files []string) []string {
	t.Helper()
	var bad []string
	cache := map[string]map[string]bool{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := fence.ReplaceAllString(string(b), "")
		text = regexp.MustCompile("`[^`\n]*`").ReplaceAllString(text, "")
		rel, _ := filepath.Rel(root, file)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			if why := linkProblem(t, file, m[1], cache); why != "" {
				bad = append(bad, fmt.Sprintf("%s: link %q: %s", rel, m[1], why))
			}
		}
	}
	return bad
}

// linkProblem is what is wrong with link target of file, or "".
func linkProblem(t *testing.T, file, target string, cache map[string]map[string]bool) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), path)
	}
	info, err := os.Stat(dest)
	if err != nil {
		return "no such file"
	}
	if frag == "" || info.IsDir() || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	a, ok := cache[dest]
	if !ok {
		db, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		a = anchors(string(db))
		cache[dest] = a
	}
	if !a[frag] {
		return "no heading with that anchor"
	}
	return ""
}

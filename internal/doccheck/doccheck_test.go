// Package doccheck holds the tests that keep the docs' code true: every Go
// block of README.md and docs/ is a piece of an Example function that
// compiles against today's API.
package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// trimmed is s's non-blank lines, each without its leading and trailing
// space: a block quotes a function's body, indented one tab less.
func trimmed(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// contains reports whether want is a run of consecutive lines of have.
func contains(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		ok := true
		for j := range want {
			if have[i+j] != want[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestDocsCodeIsExampleCode(t *testing.T) {
	root := "../.."
	var examples [][]string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "example_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			examples = append(examples, trimmed(string(b)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	blocks := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllStringSubmatch(string(b), -1) {
			blocks++
			want, found := trimmed(m[1]), false
			for _, ex := range examples {
				found = found || contains(ex, want)
			}
			if !found {
				t.Errorf("%s: a Go block is in no example_test.go, so nothing compiles it:\n%s", doc, m[1])
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go block found in the docs: the check reads nothing")
	}
}

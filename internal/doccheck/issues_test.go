package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueRef is a mention of one of the project's own issues by number
// ("issue 41", "issues 11 and 13", "issue #9"): the tracker's words, which
// a reader of the docs cannot follow. A link to another project's issue
// (envoyproxy/ratelimit#262) is not one.
var issueRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]+`)

// issueRefs returns each line of text that names an issue by number.
func issueRefs(text string) []string {
	var bad []string
	for _, line := range strings.Split(text, "\n") {
		if issueRef.MatchString(line) {
			bad = append(bad, strings.TrimSpace(line))
		}
	}
	return bad
}

// The user-facing docs name no issue of the tracker: what a page says
// must stand on its own, and its history lives in git.
func TestDocsNameNoIssues(t *testing.T) {
	for _, file := range docs(t, "../..") {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("../..", file)
		for _, line := range issueRefs(string(b)) {
			t.Errorf("%s names an issue: %q", rel, line)
		}
	}
}

// The check finds the forms the tracker's numbers take, and leaves
// other projects' links alone.
func TestDocsNameNoIssuesCatches(t *testing.T) {
	for _, s := range []string{"as issue 41 asks", "issues 11 and 13", "Issue #9", "(issue 10, first pass)"} {
		if len(issueRefs(s)) != 1 {
			t.Errorf("%q not caught", s)
		}
	}
	for _, s := range []string{"[envoyproxy/ratelimit#262](https://github.com/envoyproxy/ratelimit/issues/262)", "an issue of cost", "issues in 2 places"} {
		if len(issueRefs(s)) != 0 {
			t.Errorf("%q caught", s)
		}
	}
}

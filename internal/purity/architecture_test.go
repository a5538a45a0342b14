package purity

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

var updateArchitecture = flag.Bool("update-architecture", false, "rewrite docs/architecture.md's table of layers from Layers")

const (
	architectureDoc = "../../docs/architecture.md"
	layersBegin     = "<!-- layers: generated from internal/purity.Layers; go test ./internal/purity -update-architecture -->\n"
	layersEnd       = "<!-- end of layers -->\n"
)

// TestArchitectureDocIsCurrent holds docs/architecture.md's table of
// packages to Layers, Product and Lab (which the layering tests enforce)
// and to each package's own doc comment.
func TestArchitectureDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile(architectureDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, layersBegin), strings.Index(doc, layersEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/architecture.md lacks the markers %q and %q", layersBegin, layersEnd)
	}
	want := doc[:i+len(layersBegin)] + layersTable(t) + doc[j:]
	if *updateArchitecture {
		if err := os.WriteFile(architectureDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Fatal("docs/architecture.md's table of layers is stale: go test ./internal/purity -update-architecture")
	}
}

// layersTable is the Markdown table of every package in Layers.
func layersTable(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	synopsis := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, syn, _ := strings.Cut(l, "\t")
		synopsis[strings.TrimPrefix(path, Module+"/")] = syn
	}
	dirs := make([]string, 0, len(Layers))
	for d := range Layers {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var b strings.Builder
	b.WriteString("| package | side | may import | what it is for |\n|---|---|---|---|\n")
	for _, d := range dirs {
		side := "helper"
		switch {
		case slices.Contains(Product, d):
			side = "product"
		case slices.Contains(Lab, d):
			side = "lab"
		case strings.HasPrefix(d, "contrib/"):
			side = "product (own module)"
		}
		imports := "nothing of fleetlimit"
		if len(Layers[d]) > 0 {
			imports = "`" + strings.Join(Layers[d], "`, `") + "`"
		}
		syn, ok := synopsis[d]
		switch {
		case !ok && strings.HasPrefix(d, "contrib/"):
			syn = "in its own Go module: docs/caddy.md"
		case syn == "":
			syn = "tests only"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d, side, imports, strings.ReplaceAll(syn, "|", `\|`))
	}
	return b.String()
}

package purity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPurePackagesArePure(t *testing.T) {
	bad, err := CheckModule("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

func TestCheckerCatchesViolations(t *testing.T) {
	src := `package x
import (
	"time"
	r "math/rand/v2"
	"os"
)
func f() {
	_ = time.Now()
	go f()
	_ = r.Float64()
	_ = r.New(r.NewPCG(1, 2)).Float64() // allowed: a seeded source
	_ = time.Duration(5) // allowed: a type
	os.Exit(1)
}`
	bad, err := CheckSource("x.go", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"imports os", "uses time.Now", "starts a goroutine", "uses math/rand/v2.Float64"}
	if len(bad) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%s", len(bad), len(want), strings.Join(bad, "\n"))
	}
	for _, w := range want {
		found := false
		for _, b := range bad {
			found = found || strings.Contains(b, w)
		}
		if !found {
			t.Errorf("no violation mentions %q in:\n%s", w, strings.Join(bad, "\n"))
		}
	}
}

func TestImportsFollowTheMap(t *testing.T) {
	bad, err := CheckLayers("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	// The check can fail: design importing the limiter is refused.
	Layers["internal/design"] = nil
	defer func() { Layers["internal/design"] = []string{"store", "window"} }()
	if bad, _ := CheckLayers("../.."); len(bad) == 0 {
		t.Fatal("design imports store, yet a map without it found nothing")
	}
}

// No production package reaches the lab, through any chain of imports: the
// type system, not a run-time check, keeps a peer's model or the
// simulator's machinery out of a live limiter.
func TestProductLeavesTheLabOut(t *testing.T) {
	var pkgs []string
	for _, p := range Product {
		pkgs = append(pkgs, Module+"/"+p)
	}
	bad, err := LabReach("../..", pkgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	// The check can fail: the simulator reaches the lab.
	if bad, err := LabReach("../..", []string{Module + "/sim"}); err != nil || len(bad) == 0 {
		t.Fatalf("sim reaches sim/catalog and gonum, yet the check found %v (%v)", bad, err)
	}
}

// docs/design.md's package table says, in its third column, what each
// package may import: the same as Layers, for every package Layers lists.
func TestDesignDocTableIsTheImportMap(t *testing.T) {
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |")
		cells := strings.Split(l, " | ")
		if len(cells) != 4 || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		doc[strings.Trim(cells[0], "`")] = cells[2]
	}
	for pkg, allowed := range Layers {
		want := "nothing"
		if len(allowed) > 0 {
			quoted := make([]string, len(allowed))
			for i, a := range allowed {
				quoted[i] = "`" + a + "`"
			}
			want = strings.Join(quoted, ", ")
		}
		if got, ok := doc[pkg]; !ok {
			t.Errorf("docs/design.md's package table has no row for %s", pkg)
		} else if got != want {
			t.Errorf("docs/design.md says %s may import %s; the import map says %s", pkg, got, want)
		}
	}
}

// MaxFuncLines is the longest a function outside tests may be: one that
// cannot be read at once is cut.
const MaxFuncLines = 80

func TestNoFunctionIsTooLong(t *testing.T) {
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fs := token.NewFileSet()
		f, err := parser.ParseFile(fs, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				if n := fs.Position(fd.End()).Line - fs.Position(fd.Pos()).Line + 1; n > MaxFuncLines {
					t.Errorf("%s: %s is %d lines, over %d", path, fd.Name.Name, n, MaxFuncLines)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Package purity checks that fleetlimit's pure packages stay pure: no clock,
// no goroutines, no global random source, no I/O. It reads source files and
// never runs them.
package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Pure lists the packages (directories from the module root) that must be
// pure, with the extra imports each may use.
var Pure = map[string][]string{
	"window":             nil,
	"store":              nil,
	"store/memstore":     {"sync"}, // the many-key Store locks; Keys do not
	"internal/design":    nil,
	"internal/slotworth": nil,
	"internal/giveup":    nil,
	"sim/catalog":        {"sync"}, // the lab registry locks
	"sim":                nil,
	"replay":             nil,
	"sim/nemesis":        nil,
}

// forbiddenImports may not be imported by a pure package at all.
var forbiddenImports = map[string]string{
	"math/rand":   "use math/rand/v2 with a source seeded from the run's parameters",
	"crypto/rand": "randomness must be seeded and passed in",
	"net":         "no network", "net/http": "no network", "os": "no I/O", "os/exec": "no processes",
	"io/ioutil": "no I/O", "syscall": "no system calls", "sync": "no concurrency", "sync/atomic": "no concurrency",
	"runtime": "no scheduling", "log": "no I/O", "log/slog": "no I/O",
}

// forbiddenCalls are package functions a pure package may not call.
var forbiddenCalls = map[string]map[string]bool{
	"time": {"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "Tick": true,
		"NewTimer": true, "NewTicker": true, "AfterFunc": true},
	"math/rand/v2": {"Int": true, "IntN": true, "Int64": true, "Int64N": true, "Int32": true, "Int32N": true,
		"Uint32": true, "Uint64": true, "Uint64N": true, "UintN": true, "Float32": true, "Float64": true,
		"ExpFloat64": true, "NormFloat64": true, "Perm": true, "Shuffle": true, "N": true, "Uint": true, "Uint32N": true},
}

// CheckSource returns the purity violations in one file's source.
func CheckSource(filename string, src []byte, allowed []string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, 0)
	if err != nil {
		return nil, err
	}
	allow := map[string]bool{}
	for _, a := range allowed {
		allow[a] = true
	}
	var bad []string
	report := func(p token.Pos, format string, a ...any) {
		bad = append(bad, fmt.Sprintf("%s: %s", fset.Position(p), fmt.Sprintf(format, a...)))
	}
	names := map[string]string{} // local name -> import path
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if why, ok := forbiddenImports[path]; ok && !allow[path] {
			report(im.Pos(), "imports %s: %s", path, why)
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if im.Name != nil {
			name = im.Name.Name
		}
		names[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), "starts a goroutine")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if fns := forbiddenCalls[names[id.Name]]; fns[n.Sel.Name] {
					report(n.Pos(), "uses %s.%s: time and randomness must be passed in", names[id.Name], n.Sel.Name)
				}
			}
		}
		return true
	})
	return bad, nil
}

// CheckModule checks every non-test Go file of the Pure packages under root.
func CheckModule(root string) ([]string, error) {
	var bad []string
	dirs := make([]string, 0, len(Pure))
	for d := range Pure {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		files, err := sources(root, dir)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no Go files: the pure package list is stale", dir)
		}
		for _, f := range files {
			b, err := CheckSource(f.name, f.src, Pure[dir])
			if err != nil {
				return nil, err
			}
			bad = append(bad, b...)
		}
	}
	return bad, nil
}

// source is one Go file's name and contents.
type source struct {
	name string
	src  []byte
}

// sources reads the non-test Go files of dir below root.
func sources(root, dir string) ([]source, error) {
	names, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []source
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, source{n, src})
	}
	return out, nil
}

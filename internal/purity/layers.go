package purity

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Module is fleetlimit's module path.
const Module = "github.com/fleetlimit/fleetlimit"

// Layers lists, for each package (a directory from the module root), the
// fleetlimit packages its non-test files may import: the table of
// docs/design.md. A package not listed may import any (cmd, examples).
var Layers = map[string][]string{
	"window":                    nil,
	"store":                     {"window"},
	"store/memstore":            {"store", "window"},
	"store/redisstore":          {"store", "window"},
	"store/storetest":           {"store", "window"},
	"design":                    {"store", "window"},
	"sim":                       {"design", "store", "store/memstore", "window"},
	"sweep":                     {"sim"},
	"study":                     {"design", "sim", "sweep", "window"},
	"limiter":                   {"design", "store", "store/memstore", "window"},
	"httpmw":                    {"limiter"},
	"grpcmw":                    {"httpmw", "limiter"},
	"explore":                   {"design", "sim"},
	"accesslog":                 nil,
	"replay":                    {"accesslog", "design", "sim", "store", "store/memstore", "window"},
	"scripts/accesslog-gen":     nil,
	"scripts/roundtrip-bound":   {"sim", "study"},
	"contrib/caddy":             {"design", "httpmw", "limiter", "store/redisstore"},
	"contrib/caddy/cmd/caddy":   {"contrib/caddy"},
	"rls":                       {"design", "httpmw", "limiter", "store", "window"},
	"loadgen":                   nil,
	"internal/purity":           nil,
	"internal/redistest":        nil,
	"internal/simtest":          {"sim"},
	"internal/slowproxy":        nil,
	"scripts/sidebyside":        {"loadgen"},
	"scripts/headroom-frontier": {"design", "sim"},
	"scripts/permit-frontier":   {"design", "sim"},
}

// CheckLayers returns every import in the module's non-test files that
// Layers does not allow.
func CheckLayers(root string) ([]string, error) {
	var bad []string
	for dir, allowed := range Layers {
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[Module+"/"+a] = true
		}
		files, err := sources(root, dir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			pf, err := parser.ParseFile(token.NewFileSet(), f.name, f.src, parser.ImportsOnly)
			if err != nil {
				return nil, err
			}
			for _, imp := range pf.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, Module+"/") && !ok[path] {
					bad = append(bad, fmt.Sprintf("%s imports %s, which docs/design.md's map does not allow", f.name, path))
				}
			}
		}
	}
	unlisted, err := unlistedPackages(root)
	if err != nil {
		return nil, err
	}
	bad = append(bad, unlisted...)
	sort.Strings(bad)
	return bad, nil
}

// unlistedPackages names the package directories outside cmd/ and examples/
// that Layers leaves out, so that a new package cannot escape the map.
func unlistedPackages(root string) ([]string, error) {
	var bad []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") || rel == "cmd" || rel == "examples" || rel == "docs" || d.Name() == "testdata" {
			if rel != "." {
				return filepath.SkipDir
			}
		}
		if _, listed := Layers[rel]; listed || rel == "." {
			return nil
		}
		if files, _ := filepath.Glob(filepath.Join(path, "*.go")); len(files) > 0 {
			bad = append(bad, fmt.Sprintf("package %s is not in the import map (internal/purity.Layers, docs/design.md)", rel))
		}
		return nil
	})
	return bad, err
}

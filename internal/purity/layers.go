package purity

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
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
	"store/memstore":            {"internal/slotworth", "store", "window"},
	"store/redisstore":          {"internal/giveup", "internal/redisinspect", "store", "window"},
	"internal/redisinspect":     {"store"},
	"internal/slotworth":        nil,
	"internal/doccheck":         nil,
	"internal/giveup":           nil,
	"internal/workers":          nil,
	"store/storetest":           {"store", "window"},
	"internal/design":           {"store", "window"},
	"limiter":                   {"internal/design", "internal/giveup", "store", "store/memstore", "window"},
	"policy":                    {"limiter"},
	"httpmw":                    {"limiter", "policy"},
	"grpcmw":                    {"limiter", "policy"},
	"rls":                       {"internal/design", "limiter", "policy", "store", "window"},
	"contrib/caddy":             {"limiter", "policy", "store/redisstore"},
	"contrib/caddy/cmd/caddy":   {"contrib/caddy"},
	"sim/catalog":               {"internal/design", "store", "window"},
	"sim":                       {"internal/design", "sim/catalog", "store", "store/memstore", "window"},
	"sweep":                     {"sim"},
	"sim/nemesis":               {"internal/design", "sim", "window"},
	"study":                     {"internal/design", "sim", "sim/catalog", "sweep", "window"},
	"explore":                   {"sim", "sim/catalog", "study"},
	"accesslog":                 nil,
	"replay":                    {"accesslog", "internal/design", "sim", "sim/catalog", "store", "store/memstore", "window"},
	"scripts/accesslog-gen":     nil,
	"scripts/roundtrip-bound":   {"sim", "study"},
	"loadgen":                   nil,
	"internal/purity":           nil,
	"internal/redistest":        nil,
	"internal/simtest":          {"sim"},
	"internal/slowproxy":        nil,
	"scripts/sidebyside":        {"loadgen"},
	"scripts/headroom-frontier": {"internal/design", "sim", "sim/catalog"},
	"scripts/permit-frontier":   {"internal/design", "sim", "sim/catalog"},
}

// Product lists the packages a production user imports: the live designs,
// the stores, the limiter, the enforcement points. None of them may reach a
// Lab package, directly or through another (TestProductLeavesTheLabOut
// reads go list -deps).
var Product = []string{"window", "store", "store/memstore", "store/redisstore", "internal/design", "limiter", "policy", "httpmw", "grpcmw", "rls"}

// Lab lists the simulator's side: the peers' models and the simulator's
// hints (sim/catalog), the simulator, the study, replay, the explorer.
var Lab = []string{"sim", "sim/catalog", "sweep", "study", "replay", "explore"}

// LabModules are modules only the lab may depend on: plots and a browser.
var LabModules = []string{"gonum.org/v1/plot", "github.com/chromedp/"}

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

// LabReach returns, for each of pkgs (import paths), every package of the
// lab or of LabModules among its dependencies, as go list -deps finds them
// from the module root.
func LabReach(root string, pkgs []string) ([]string, error) {
	var bad []string
	for _, p := range pkgs {
		cmd := exec.Command("go", "list", "-deps", p)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list -deps %s: %w", p, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if labPackage(dep) {
				bad = append(bad, fmt.Sprintf("%s depends on %s, which is the lab's", p, dep))
			}
		}
	}
	return bad, nil
}

// labPackage reports whether an import path is the lab's.
func labPackage(path string) bool {
	for _, l := range Lab {
		if path == Module+"/"+l || strings.HasPrefix(path, Module+"/"+l+"/") {
			return true
		}
	}
	for _, m := range LabModules {
		if strings.HasPrefix(path, m) {
			return true
		}
	}
	return false
}

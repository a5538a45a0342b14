package rls

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"sort"
	"strconv"
	"testing"
)

// TestConfigKeysAreTheParsers holds ConfigKeys to the keys parse.go's
// switches read: a key the parser learns and the table lacks (or the
// reverse) fails, so the reference generated from the table stays whole.
func TestConfigKeysAreTheParsers(t *testing.T) {
	f, err := goparser.ParseFile(token.NewFileSet(), "parse.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	parsed := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CaseClause); ok {
			for _, e := range c.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					parsed[s] = true
				}
			}
		}
		return true
	})
	delete(parsed, "fleetlimit") // the Settings section, documented from Settings
	table := map[string]bool{}
	for _, k := range ConfigKeys() {
		table[k.Key] = true
		if k.Where == "" || k.Meaning == "" {
			t.Errorf("key %s: say where it goes and what it means", k.Key)
		}
	}
	var missing, extra []string
	for k := range parsed {
		if !table[k] {
			missing = append(missing, k)
		}
	}
	for k := range table {
		if !parsed[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Fatalf("parse.go reads %v that ConfigKeys lacks; ConfigKeys names %v that parse.go does not read", missing, extra)
	}
}

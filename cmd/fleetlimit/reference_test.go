package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/rls"
)

var updateReference = flag.Bool("update-reference", false, "rewrite docs/reference.md from the code")

const referencePath = "../../docs/reference.md"

// TestReferenceIsCurrent holds docs/reference.md to what the code defines:
// every command and flag, every environment variable, every key of a
// limits file and every metric. `go generate ./cmd/fleetlimit` rewrites it.
//go:generate go test -run TestReferenceIsCurrent|TestDocsPicturesAreCurrent -update-reference .

func TestReferenceIsCurrent(t *testing.T) {
	got := renderReference(t)
	if *updateReference {
		if err := os.WriteFile(referencePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, got) {
		t.Fatalf("docs/reference.md is stale: run go generate ./cmd/fleetlimit (a flag, variable, key or metric changed)")
	}
}

// TestReferenceNamesEverything plants nothing: it checks the rendering
// itself names each flag of serve and each metric, so a renderer that
// dropped a section could not pass TestReferenceIsCurrent by accident.
func TestReferenceNamesEverything(t *testing.T) {
	ref := string(renderReference(t))
	serve, _, err := newRoot().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	serve.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !strings.Contains(ref, "`--"+f.Name+"`") {
			t.Errorf("serve's --%s is missing", f.Name)
		}
	})
	for _, v := range envVars {
		if !strings.Contains(ref, "`"+v.name+"`") {
			t.Errorf("variable %s is missing", v.name)
		}
	}
	for _, m := range metricsOf(t) {
		if !strings.Contains(ref, "`"+m.Name+"`") {
			t.Errorf("metric %s is missing", m.Name)
		}
	}
}

func renderReference(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# Reference\n\n")
	b.WriteString("Generated from the code by `go generate ./cmd/fleetlimit`; a test fails when it\n" +
		"is stale. Contents: [commands](#commands), [environment variables](#environment-variables),\n" +
		"[limits file keys](#limits-file-keys), [the fleetlimit section](#the-fleetlimit-section),\n" +
		"[metrics](#metrics).\n\n")
	writeCommands(&b, newRoot())
	writeEnv(&b)
	writeConfigKeys(&b)
	writeSettings(t, &b)
	writeMetrics(&b, metricsOf(t))
	return b.Bytes()
}

// cell makes s fit in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

func writeCommands(b *bytes.Buffer, root *cobra.Command) {
	b.WriteString("## Commands\n\n")
	if root.PersistentFlags().HasAvailableFlags() {
		b.WriteString("Flags of every command:\n\n")
		writeFlags(b, root.PersistentFlags())
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			fmt.Fprintf(b, "### %s\n\n%s.\n\n```\n%s\n```\n\n", sub.CommandPath(), strings.TrimSuffix(sub.Short, "."), sub.UseLine())
			writeFlags(b, sub.LocalNonPersistentFlags())
			walk(sub)
		}
	}
	walk(root)
}

func writeFlags(b *bytes.Buffer, fs *pflag.FlagSet) {
	if !fs.HasAvailableFlags() {
		return
	}
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name += ", `-" + f.Shorthand + "`"
		}
		def := f.DefValue
		if def == "" || def == "[]" {
			def = " "
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", name, def, cell(f.Usage))
	})
	b.WriteString("\n")
}

func writeEnv(b *bytes.Buffer) {
	b.WriteString("## Environment variables\n\n")
	b.WriteString("`fleetlimit serve` reads envoyproxy/ratelimit's variables, with their meanings,\n" +
		"and its own `FLEETLIMIT_` ones; a flag on the command line wins.\n\n")
	b.WriteString("| variable | what serve does with it |\n|---|---|\n")
	for _, v := range envVars {
		fmt.Fprintf(b, "| `%s` | %s |\n", v.name, cell(envMeaning(v)))
	}
	for _, a := range addrVars {
		fmt.Fprintf(b, "| `%s`, `%s` | set `--%s` (host default `0.0.0.0`, port default `%s`) |\n", a.host, a.port, a.flag, a.defPort)
	}
	b.WriteString("\n")
}

// envMeaning says what serve does with v.
func envMeaning(v envVar) string {
	var s string
	switch {
	case v.flag != "":
		s = "sets `--" + v.flag + "`"
	case v.refuse != nil && v.refuse("true") == "" && v.refuse("false") == "":
		s = "accepted as true or false; fleetlimit's behaviour is fixed (docs/serve.md); another value is an error"
	case v.refuse != nil:
		why := v.refuse("true")
		if why == "" {
			why = v.refuse("an-unsupported-value")
		}
		s = "accepted where it asks for what fleetlimit does; otherwise an error: " + why
	case v.note != "":
		s = "no effect: " + v.note + " (logged)"
	default:
		s = "read by serve itself (a secret, never a flag)"
	}
	if v.when != "" {
		s += ", when `" + v.when + "` is true"
	}
	return s
}

func writeConfigKeys(b *bytes.Buffer) {
	b.WriteString("## Limits file keys\n\n")
	b.WriteString("The keys of a limits file (docs/serve.md, \"The configuration\"), as envoyproxy/ratelimit reads them.\n\n")
	b.WriteString("| key | in | meaning |\n|---|---|---|\n")
	for _, k := range rls.ConfigKeys() {
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", k.Key, k.Where, cell(k.Meaning))
	}
	b.WriteString("\n")
}

// writeSettings lists rls.Settings' YAML keys with the comments of its
// fields in rls/settings.go.
func writeSettings(t *testing.T, b *bytes.Buffer) {
	t.Helper()
	docs := settingsDocs(t)
	b.WriteString("## The fleetlimit section\n\n")
	b.WriteString("An optional top-level `fleetlimit:` mapping of a limits file (envoyproxy/ratelimit files work without it);\n" +
		"serve's flags and environment variables override it.\n\n")
	b.WriteString("| key | type | meaning |\n|---|---|---|\n")
	st := reflect.TypeOf(rls.Settings{})
	for i := range st.NumField() {
		f := st.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		doc := docs[f.Name]
		if doc == "" {
			t.Errorf("rls.Settings.%s has no comment to document yaml key %s", f.Name, key)
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", key, f.Type.String(), cell(doc))
	}
	b.WriteString("\n")
}

// settingsDocs is the comment of each field of rls.Settings.
func settingsDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := goparser.ParseFile(token.NewFileSet(), "../../rls/settings.go", nil, goparser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Settings" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			text := strings.TrimSpace(fld.Doc.Text() + " " + fld.Comment.Text())
			for _, n := range fld.Names {
				docs[n.Name] = text
			}
		}
		return false
	})
	return docs
}

func metricsOf(t *testing.T) []rls.Metric {
	t.Helper()
	lim, err := limiter.New(limiter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	cfg, err := rls.Parse("ref.yaml", strings.NewReader("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := rls.NewService(cfg, lim).Metrics()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func writeMetrics(b *bytes.Buffer, ms []rls.Metric) {
	b.WriteString("## Metrics\n\n")
	b.WriteString("On serve's HTTP address at `/metrics` (and `--metrics-addr` when set), beside the Go\n" +
		"runtime's, the process's and `go_build_info`.\n\n")
	b.WriteString("| metric | type | labels | meaning |\n|---|---|---|---|\n")
	for _, m := range ms {
		labels := " "
		if len(m.Labels) > 0 {
			labels = "`" + strings.Join(m.Labels, "`, `") + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", m.Name, m.Type, labels, cell(m.Help))
	}
}

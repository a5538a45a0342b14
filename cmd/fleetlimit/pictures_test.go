package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docsPictures are the runs docs/simulator.md shows drawn, each with the
// command that draws it, which the page quotes.
var docsPictures = []struct{ file, args string }{
	{"docs/img/timeline-shared-counter.svg", "sim --design shared-counter --gateways 8 --traffic flood:100 --duration 5m"},
	{"docs/img/timeline-permit.svg", "sim --design permit --gateways 8 --traffic steady:0.8,flood:100+90s --duration 5m --timeline-until 4m"},
}

// The pictures in the docs are what the commands the page quotes draw
// today (go generate ./cmd/fleetlimit redraws them).
func TestDocsPicturesAreCurrent(t *testing.T) {
	page, err := os.ReadFile("../../docs/simulator.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, pic := range docsPictures {
		quoted := "fleetlimit " + pic.args + " --timeline " + pic.file
		if !strings.Contains(string(page), quoted) {
			t.Errorf("docs/simulator.md does not quote %q", quoted)
		}
		if !strings.Contains(string(page), "]("+strings.TrimPrefix(pic.file, "docs/")+")") {
			t.Errorf("docs/simulator.md does not show %s", pic.file)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(pic.file))
		if code, _, errs := runCLI(append(strings.Fields(pic.args), "--timeline", out)...); code != 0 {
			t.Fatalf("%s: exit %d: %s", pic.args, code, errs)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("../..", pic.file)
		if *updateReference {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if have, err := os.ReadFile(path); err != nil || !bytes.Equal(have, got) {
			t.Errorf("%s is stale (%v): run go generate ./cmd/fleetlimit", pic.file, err)
		}
	}
}

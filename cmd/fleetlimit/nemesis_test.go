package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNemesisBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"nemesis", "--seeds", "0"},
		{"nemesis", "--seeds", "-3"},
		{"nemesis", "--seeds", "2000000"},
		{"nemesis", "--designs", "kong"},
		{"nemesis", "--designs", "permit,"},
		{"nemesis", "--workers", "-1"},
		{"nemesis", "extra"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, code, stderr)
		}
	}
}

// A short sweep reports every case it ran, by design, and no violation;
// --designs keeps the draws to the designs named.
func TestNemesisSweep(t *testing.T) {
	code, stdout, stderr := runCLI("nemesis", "--seeds", "40", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	var out struct {
		Cases      map[string]int `json:"cases"`
		Requests   int64          `json:"requests"`
		Violations int            `json:"violations"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range out.Cases {
		n += c
	}
	if n != 40 || out.Requests == 0 || out.Violations != 0 {
		t.Fatalf("%+v", out)
	}
	code, stdout, _ = runCLI("nemesis", "--seeds", "20", "--designs", "permit,headroom")
	if code != 0 || !strings.Contains(stdout, "20 cases") || strings.Contains(stdout, "lease") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

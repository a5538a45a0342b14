package main

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The pages whose shell blocks TestDocsCommands runs: what a newcomer
// types first.
var commandPages = []string{"README.md", "docs/getting-started.md"}

// skipped are the commands TestDocsCommands does not run, and why.
var skipped = map[string]string{
	"./scripts/test": "it is the suite this test is part of",
	"go install github.com/fleetlimit/fleetlimit/cmd/fleetlimit@latest": "needs the module published and the network",
}

// shBlock is a fenced shell block of a Markdown page.
var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// docsRun runs the commands of the pages in order, from the repository's
// root: fleetlimit's own in this process (serve as a child process), the
// others as they are, long-running servers in the background on free
// loopback ports in place of the ones the page names.
type docsRun struct {
	t      *testing.T
	root   string
	tmp    string
	addrs  map[string]string // an address a page names → the one used
	binDir string
}

// TestDocsCommands runs every command of the README's and the getting
// started page's shell blocks as a newcomer would, and fails on any that
// exits non-zero.
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the docs' commands")
	}
	if raceEnabled {
		// it builds and runs servers and examples: beside the race
		// detector's live fleets, on two cores, it pushed their store
		// calls past their timeouts
		t.Skip("runs without the race detector (./scripts/test's docs job)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	r := &docsRun{t: t, root: root, tmp: t.TempDir(), addrs: map[string]string{}}
	r.binDir = filepath.Join(r.tmp, "bin")
	for _, page := range commandPages {
		b, err := os.ReadFile(filepath.Join(r.root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range shBlock.FindAllStringSubmatch(string(b), -1) {
			for _, line := range strings.Split(m[1], "\n") {
				if line = strings.TrimSpace(stripComment(line)); line != "" {
					r.command(page, line)
				}
			}
		}
	}
}

// stripComment drops a shell comment that follows a command.
func stripComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		return line[:i]
	}
	return line
}

func (r *docsRun) command(page, line string) {
	t := r.t
	if why, ok := skipped[line]; ok {
		t.Logf("%s: not run: %s (%s)", page, line, why)
		return
	}
	args, out := shellWords(line)
	for i, a := range args {
		args[i] = r.rewrite(a)
	}
	switch {
	case len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/fleetlimit":
		r.fleetlimit(page, line, args[3:], out)
	case args[0] == "fleetlimit":
		r.fleetlimit(page, line, args[1:], out)
	case len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./examples/httpserver":
		// built, then run: killing go run would leave the server running
		bin := filepath.Join(r.binDir, "httpserver")
		r.external(page, "go build "+args[2], []string{"go", "build", "-o", bin, args[2]}, "")
		r.background(page, line, exec.Command(bin, args[3:]...), r.addrs["127.0.0.1:8090"])
	default:
		r.external(page, line, args, out)
	}
}

// shellWords splits a command line the pages write: words, '…' quoted
// words, and an optional "> FILE" at the end.
func shellWords(line string) (args []string, out string) {
	if i := strings.LastIndex(line, " > "); i >= 0 {
		line, out = line[:i], strings.TrimSpace(line[i+3:])
	}
	for _, m := range regexp.MustCompile(`'[^']*'|\S+`).FindAllString(line, -1) {
		args = append(args, strings.Trim(m, "'"))
	}
	return args, out
}

// rewrite maps a page's address to a free one, and a file the page made
// or names to its path from here.
func (r *docsRun) rewrite(a string) string {
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:8081", "127.0.0.1:8090"} {
		if strings.Contains(a, addr) {
			if r.addrs[addr] == "" {
				r.addrs[addr] = freeAddr(r.t)
			}
			a = strings.ReplaceAll(a, addr, r.addrs[addr])
		}
	}
	if _, err := os.Stat(filepath.Join(r.tmp, a)); err == nil && !strings.HasPrefix(a, "-") {
		return filepath.Join(r.tmp, a)
	}
	if _, err := os.Stat(filepath.Join(r.root, a)); err == nil && strings.Contains(a, "/") && !strings.HasPrefix(a, ".") && !strings.HasPrefix(a, "-") {
		return filepath.Join(r.root, a)
	}
	return a
}

// fleetlimit runs one fleetlimit command: serve as a child process on
// free ports, the others in this process.
func (r *docsRun) fleetlimit(page, line string, args []string, out string) {
	t := r.t
	if len(args) > 0 && args[0] == "serve" {
		for _, def := range []struct{ flag, addr string }{{"--grpc-addr", "127.0.0.1:8081"}, {"--http-addr", "127.0.0.1:8080"}} {
			args = append(args, def.flag, r.rewrite(def.addr))
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "FLEETLIMIT_E2E_CHILD=1")
		r.background(page, line, cmd, r.addrs["127.0.0.1:8080"]+"/healthcheck")
		return
	}
	var drawn string // a picture the command draws, into the scratch directory
	for i := 1; i < len(args); i++ {
		if args[i-1] == "--timeline" && (strings.HasSuffix(args[i], ".svg") || strings.HasSuffix(args[i], ".png")) {
			drawn = filepath.Join(r.tmp, filepath.Base(args[i]))
			args[i] = drawn
		}
	}
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("%s: %s: exit %d\n%s", page, line, code, stderr)
	}
	if drawn != "" {
		checkPicture(t, page, line, drawn)
	}
	r.save(out, stdout)
	t.Logf("%s: %s: ok", page, line)
}

// background starts a server and waits until it answers at url.
func (r *docsRun) background(page, line string, cmd *exec.Cmd, url string) {
	t := r.t
	if cmd.Dir == "" {
		cmd.Dir = r.root
	}
	var errs bytes.Buffer
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %s: %v", page, line, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + url); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s: %s: exited (%v) before it answered\n%s", page, line, err, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s: did not answer at %s\n%s", page, line, url, errs.String())
		}
	}
	t.Logf("%s: %s: serving", page, line)
}

// external runs any other command from the repository's root.
func (r *docsRun) external(page, line string, args []string, out string) {
	t := r.t
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = r.root
	if args[0] == "go" && len(args) > 1 && args[1] == "install" {
		cmd.Env = append(os.Environ(), "GOBIN="+r.binDir)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %s: %v\n%s", page, line, err, stderr.String())
	}
	r.save(out, stdout.String())
	t.Logf("%s: %s: ok", page, line)
}

func (r *docsRun) save(out, text string) {
	if out == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(r.tmp, out), []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// checkPicture fails the test unless file is a picture: an SVG document
// that parses, or a PNG that decodes.
func checkPicture(t *testing.T, page, line, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: %s: drew nothing: %v", page, line, err)
	}
	if strings.HasSuffix(file, ".png") {
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("%s: %s: not a PNG: %v", page, line, err)
		}
		return
	}
	var doc struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(b, &doc); err != nil || doc.XMLName.Local != "svg" {
		t.Fatalf("%s: %s: not an SVG document (%v, root %q)", page, line, err, doc.XMLName.Local)
	}
}

package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion, when set at link time (-ldflags "-X main.buildVersion=v1.2.3",
// as the Dockerfile does), is the version.
var buildVersion string

// version is this binary's version: buildVersion, else from its build info
// the module version for `go install …@vX`, else the commit it was built
// from (with -dirty when the tree had changes), else "devel".
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v + " (" + bi.GoVersion + ")"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel (" + bi.GoVersion + ")"
	}
	return "devel-" + rev[:min(12, len(rev))] + dirty + " " + strings.TrimSpace(at) + " (" + bi.GoVersion + ")"
}

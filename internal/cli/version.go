package cli

import (
	"runtime/debug"
	"strings"
)

// version is the release this binary was built from; a release build sets
// it with -ldflags
// "-X github.com/rnnaudit/rnnaudit/internal/cli.version=v1.2.3". When it
// is empty, the module version and VCS revision recorded by the Go
// toolchain are used.
var version string

// versionString is the line printed by audit --version, such as
// "rnnaudit v1.2.3 (go1.22.1)" or "rnnaudit (devel) 1a936bb1 modified
// (go1.22.1)".
func versionString() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok {
		v = info.Main.Version
		var rev string
		var dirty bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			v += " " + rev[:min(len(rev), 12)]
			if dirty {
				v += " modified"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	goVersion := "unknown Go"
	if ok {
		goVersion = info.GoVersion
	}
	return "rnnaudit " + strings.TrimSpace(v) + " (" + goVersion + ")"
}

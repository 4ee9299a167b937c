// Package version carries the build's version, set at link time with
// -ldflags "-X github.com/ripcord/ripcord/internal/version.Version=v1.2.3".
package version

import "runtime/debug"

// Version is the release; "dev" for a local build.
var Version = "dev"

// String is the version with the VCS revision when the build knows it.
func String() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	return v
}

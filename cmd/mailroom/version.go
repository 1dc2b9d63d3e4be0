package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionSummary = "print the version of this binary: module version, commit and Go version"

func runVersion(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{verb: "version", summary: versionSummary, usage: "[--json]", example: "mailroom version"})
	asJSON := fs.Bool("json", false, "print {version, revision, time, modified, go} as JSON")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo() // nil when the build recorded nothing
	v := versionOf(bi)
	if *asJSON {
		return writeJSON(e.stdout, v)
	}
	printVersion(e.stdout, v)
	return nil
}

// versionReport is the --json shape; what the build did not record is null.
type versionReport struct {
	Version string `json:"version"`
	// Revision and Time are the commit the binary was built from and its
	// time, recorded by go build in a checkout; Modified says the checkout
	// had uncommitted changes.
	Revision *string `json:"revision"`
	Time     *string `json:"time"`
	Modified *bool   `json:"modified"`
	Go       string  `json:"go"`
}

// versionOf reads what the build recorded; bi is nil when it recorded
// nothing (a binary built without module support).
func versionOf(bi *debug.BuildInfo) versionReport {
	v := versionReport{Version: "(devel)", Go: runtime.Version()}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		value := s.Value
		switch s.Key {
		case "vcs.revision":
			v.Revision = &value
		case "vcs.time":
			v.Time = &value
		case "vcs.modified":
			modified := value == "true"
			v.Modified = &modified
		}
	}
	return v
}

func printVersion(w io.Writer, v versionReport) {
	fmt.Fprintf(w, "mailroom %s\n", v.Version)
	if v.Revision != nil {
		fmt.Fprintf(w, "commit   %s", *v.Revision)
		if v.Modified != nil && *v.Modified {
			fmt.Fprint(w, " (with uncommitted changes)")
		}
		fmt.Fprintln(w)
	}
	if v.Time != nil {
		fmt.Fprintf(w, "time     %s\n", *v.Time)
	}
	fmt.Fprintf(w, "go       %s\n", v.Go)
}

// moduleVersion is the binary's module version, as `mailroom version`
// prints it first.
func moduleVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi).Version
}

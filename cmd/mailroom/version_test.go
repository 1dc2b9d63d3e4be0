package main

import (
	"encoding/json"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	out := mustCLI(t, "", "version")
	// A test binary records no module version and no commit.
	if want := "mailroom (devel)\ngo       " + runtime.Version() + "\n"; out != want {
		t.Errorf("version = %q, want %q", out, want)
	}
	if alias := mustCLI(t, "", "--version"); alias != out {
		t.Errorf("--version = %q, want what version prints, %q", alias, out)
	}
	var got map[string]json.RawMessage
	mustJSON(t, "", &got, "version", "--json")
	if keys := strings.Join(slices.Sorted(maps.Keys(got)), ","); keys != "go,modified,revision,time,version" {
		t.Errorf("version --json keys = %s", keys)
	}
	if string(got["revision"]) != "null" || string(got["version"]) != `"(devel)"` {
		t.Errorf("version --json = %v", got)
	}
	if o := cli(t, "", "version", "now"); o.code != 2 {
		t.Errorf("version now: exit %d, want 2", o.code)
	}
}

// TestVersionOfABuild: what go build records of a checkout is printed.
func TestVersionOfABuild(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/mailroom/mailroom", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "c92529d5e0c1b4f4f1c9a8a1b2c3d4e5f6a7b8c9"},
			{Key: "vcs.time", Value: "2030-01-02T15:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	var b strings.Builder
	printVersion(&b, versionOf(bi))
	want := "mailroom v1.4.0\ncommit   c92529d5e0c1b4f4f1c9a8a1b2c3d4e5f6a7b8c9 (with uncommitted changes)\ntime     2030-01-02T15:04:05Z\ngo       go1.26.8\n"
	if b.String() != want {
		t.Errorf("version of a build = %q, want %q", b.String(), want)
	}
	if v := versionOf(nil); v.Version != "(devel)" || v.Revision != nil || v.Go != runtime.Version() {
		t.Errorf("version without build info = %+v", v)
	}
}

func TestVersionHelp(t *testing.T) {
	o := cliEnv(t, nil, "version", "--help")
	if o.code != 0 {
		t.Errorf("version --help: exit %d", o.code)
	}
	wantContains(t, "version --help", o.stdout, "Usage:", "Example:\n  mailroom version", "-json")
}

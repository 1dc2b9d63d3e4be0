package logstore

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestFilesystemTellsVolatileFromDisk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("filesystem names come from statfs(2) on Linux only")
	}
	name, volatile, err := Filesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		t.Fatal("Filesystem(TempDir) gave an empty name")
	}
	if volatile != (name == "tmpfs" || name == "ramfs") {
		t.Errorf("Filesystem(TempDir) = %q, volatile %v", name, volatile)
	}

	shm := shmDir(t)
	name, volatile, err = Filesystem(shm)
	if err != nil {
		t.Fatal(err)
	}
	if name != "tmpfs" || !volatile {
		t.Errorf("Filesystem(%s) = %q, volatile %v; want tmpfs, volatile", shm, name, volatile)
	}

	if _, _, err := Filesystem("/no/such/dir"); err == nil || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("Filesystem(/no/such/dir) error = %v, want one naming the dir", err)
	}
}

// shmDir is a fresh directory on /dev/shm, the tmpfs Linux machines mount
// for shared memory; the test skips where there is none.
func shmDir(t *testing.T) string {
	t.Helper()
	if name, err := statFS("/dev/shm"); err != nil || name != "tmpfs" {
		t.Skipf("no tmpfs at /dev/shm (%q, %v)", name, err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "mailroom-test-")
	if err != nil {
		t.Skipf("cannot use /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

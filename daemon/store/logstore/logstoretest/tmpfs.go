// Package logstoretest helps tests that need a data dir on a particular
// kind of filesystem.
package logstoretest

import (
	"os"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/logstore"
)

// shm is the tmpfs Linux machines mount for shared memory.
const shm = "/dev/shm"

// TmpfsDir returns a fresh directory on tmpfs, removed when the test ends.
// The test is skipped where there is no tmpfs at /dev/shm to use.
func TmpfsDir(t testing.TB) string {
	t.Helper()
	if fs, _, err := logstore.Filesystem(shm); err != nil || fs != "tmpfs" {
		t.Skipf("no tmpfs at %s (%q, %v)", shm, fs, err)
	}
	dir, err := os.MkdirTemp(shm, "mailroom-test-")
	if err != nil {
		t.Skipf("cannot use %s: %v", shm, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

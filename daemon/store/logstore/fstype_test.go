package logstore_test

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/logstore/logstoretest"
)

func TestFilesystemTellsVolatileFromDisk(t *testing.T) {
	name, volatile, err := logstore.Filesystem(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if name == "" {
		t.Fatal("Filesystem(TempDir) gave an empty name")
	}
	if volatile != (name == "tmpfs" || name == "ramfs") {
		t.Errorf("Filesystem(TempDir) = %q, volatile %v", name, volatile)
	}

	if _, _, err := logstore.Filesystem("/no/such/dir"); err == nil || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("Filesystem(/no/such/dir) error = %v, want one naming the dir", err)
	}

	shm := logstoretest.TmpfsDir(t)
	name, volatile, err = logstore.Filesystem(shm)
	if err != nil {
		t.Fatal(err)
	}
	if name != "tmpfs" || !volatile {
		t.Errorf("Filesystem(%s) = %q, volatile %v; want tmpfs, volatile", shm, name, volatile)
	}
}

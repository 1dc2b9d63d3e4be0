package logstore_test

import (
	"testing"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Store {
		s, err := logstore.Open(dir, logstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

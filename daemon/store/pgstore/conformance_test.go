package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
)

// open opens a store on the schema named for key, as the sole instance.
func open(t *testing.T, url, schema string) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, pgstore.Options{URL: url, Schema: schema, Holder: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	storetest.Run(t, func(t *testing.T, dir string) store.Store {
		return open(t, url, pgtest.Schema(t, url, dir))
	})
}

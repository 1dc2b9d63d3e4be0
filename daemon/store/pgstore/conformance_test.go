package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
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

// openLeading opens a store on the schema named for key in the shared
// mode the daemon runs, follows, and returns once it leads.
func openLeading(t *testing.T, url, schema string) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, pgstore.Options{URL: url, Schema: schema, Holder: t.Name(), Follow: true,
		CampaignInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	leading := make(chan struct{})
	var once sync.Once
	s.Follow(s.LastSeq(), func(mailbox.Event) error { return nil }, func(r store.Role) {
		if r.Leader {
			once.Do(func() { close(leading) })
		}
	})
	select {
	case <-leading:
	case <-ctx.Done():
		s.Close()
		t.Fatalf("the store did not take the lead of schema %s: %v", schema, ctx.Err())
	}
	return s
}

// TestConformance runs the suite on the mode the daemon runs: a shared
// store, once it leads.
func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	storetest.Run(t, func(t *testing.T, dir string) store.Store {
		return openLeading(t, url, pgtest.Schema(t, url, dir))
	})
}

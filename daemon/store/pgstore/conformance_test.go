package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/mailbox"
)

// follow opens a store as the daemon does (every instance shares the
// log) and follows the log from its head; it does not wait for the lead.
func follow(t *testing.T, o pgstore.Options) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.Holder == "" {
		o.Holder = t.Name()
	}
	if o.CampaignInterval == 0 {
		o.CampaignInterval = 20 * time.Millisecond
	}
	s, err := pgstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	s.Follow(s.LastSeq(), func(mailbox.Event) error { return nil }, nil)
	return s
}

// waitLead waits until s leads.
func waitLead(t *testing.T, s *pgstore.Store) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !s.Role().Leader; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not take the lead in 30s (role %+v)", s.Schema(), s.Role())
		}
	}
}

// openLeading opens a store on schema as the daemon does, follows, and
// returns once it leads.
func openLeading(t *testing.T, url, schema string) *pgstore.Store {
	t.Helper()
	s := follow(t, pgstore.Options{URL: url, Schema: schema})
	waitLead(t, s)
	return s
}

// appendAgain appends ev until s takes it: a leader that failed steps
// down, refusing appends, and leads again by winning a campaign.
func appendAgain(t *testing.T, s *pgstore.Store, ev mailbox.Event) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := appendOne(t, s, ev)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the append of seq %d is still refused after 30s: %v", ev.Seq, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConformance runs the suite on the mode the daemon runs: a shared
// store, once it leads.
func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	storetest.Run(t, func(t *testing.T, dir string) store.Store {
		return openLeading(t, url, pgtest.Schema(t, url, dir))
	})
}

package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/daemon/store/pgstore"
	"github.com/mailroom/mailroom/daemon/store/pgstore/pgtest"
	"github.com/mailroom/mailroom/daemon/store/storetest"
)

func TestShared(t *testing.T) {
	url := pgtest.URL(t)
	var mu sync.Mutex
	holders := map[store.Shared]string{}
	storetest.RunShared(t, func(t *testing.T, dir string, i int) store.Shared {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		holder := fmt.Sprintf("i%d-%s", i, uuid.NewString()[:8])
		s, err := pgstore.Open(ctx, pgstore.Options{URL: url, Schema: pgtest.Schema(t, url, dir), Holder: holder,
			Advertise: "http://" + holder, CampaignInterval: 20 * time.Millisecond, SessionTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		holders[s] = holder
		mu.Unlock()
		return s
	}, storetest.SharedHooks{
		Disconnect: func(t *testing.T, s store.Shared) {
			mu.Lock()
			holder := holders[s]
			mu.Unlock()
			if n := query(t, url, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE '%:' || $1`, holder); n < 1 {
				t.Fatalf("no session of %s to end", holder)
			}
		},
		Pause: func(t *testing.T, s store.Shared) func() {
			return s.(*pgstore.Store).Pause()
		},
		AfterFailovers: func(t *testing.T, dir string) {
			schema := pgtest.Schema(t, url, dir)
			if down := query(t, url, `SELECT count(*) FROM (SELECT epoch < lag(epoch) OVER (ORDER BY seq) AS down FROM `+schema+`.events) x WHERE down`); down != 0 {
				t.Errorf("%d events carry an older epoch than the event before them", down)
			}
			if terms := query(t, url, `SELECT count(DISTINCT epoch) FROM `+schema+`.events`); terms < 5 {
				t.Errorf("the events were written in %d terms, want the takeovers to show", terms)
			}
		},
	})
}

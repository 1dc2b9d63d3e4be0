package logstore_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/daemon/store/storetest"
	"github.com/mailroom/mailroom/internal/metrics"
)

// The log reports its own figures: the sync histogram lives beside the
// writer that times the syncs, and counts every one of them.
func TestLogWritesItsOwnMetrics(t *testing.T) {
	s, err := logstore.Open(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := storetest.NewWorkload(3)
	for range 4 {
		storetest.AppendAll(t, s, w.Events(t, 25)...)
	}
	var mw metrics.Writer
	s.WriteMetrics(&mw)
	raw, err := mw.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Appended float64 `json:"mailroom_events_appended_total"`
		Batches  float64 `json:"mailroom_fsync_batches_total"`
		Syncs    struct {
			Buckets []struct {
				LE    float64 `json:"le"`
				Count uint64  `json:"count"`
			} `json:"buckets"`
			Sum   float64 `json:"sum"`
			Count uint64  `json:"count"`
		} `json:"mailroom_fsync_duration_seconds"`
		LogBytes float64 `json:"mailroom_log_bytes"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	st := s.Stats()
	if got.Appended != 100 || got.Batches != float64(st.Batches) || got.Batches < 4 {
		t.Fatalf("appended %v, batches %v; want 100 and the store's %d (at least 4)", got.Appended, got.Batches, st.Batches)
	}
	var inBuckets uint64
	for _, b := range got.Syncs.Buckets {
		inBuckets += b.Count
	}
	if got.Syncs.Count != st.Batches || inBuckets > got.Syncs.Count || got.Syncs.Sum <= 0 || len(got.Syncs.Buckets) != 11 {
		t.Fatalf("sync histogram %+v: want %d syncs, a positive sum and 11 buckets", got.Syncs, st.Batches)
	}
	if got.LogBytes <= 0 {
		t.Fatalf("log bytes %v", got.LogBytes)
	}
	var text strings.Builder
	if err := mw.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "# TYPE mailroom_fsync_duration_seconds histogram\n") || !strings.Contains(text.String(), `mailroom_fsync_duration_seconds_bucket{le="+Inf"} `) {
		t.Fatalf("text exposition lacks the histogram:\n%s", text.String())
	}
}

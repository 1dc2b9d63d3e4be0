package bench

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

func TestLightReaderParsesWhatTheReportNeeds(t *testing.T) {
	long := `{"seq":7,"at_ms":1795373351541,"type":"snapshot","snapshot":{"x":"` + strings.Repeat("y", 200<<10) + `"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("id: 7\nevent: snapshot\ndata: " + long + "\n\n: ping\n\nid: 8\n"))
	}))
	defer srv.Close()
	var got []mailbox.Event
	err := readStream(t.Context(), srv.Client(), srv.URL, "", false, 0, nil, func(ev mailbox.Event) bool {
		got = append(got, ev)
		return true
	})
	if len(got) != 1 || got[0].Seq != 7 || got[0].Type != mailbox.EventSnapshot || got[0].AtMs != 1795373351541 {
		t.Fatalf("events = %+v, want the 200 KiB snapshot's seq, type and at_ms alone (the ping is none, the block cut short is dropped)", got)
	}
	var kept int
	_ = readStream(t.Context(), srv.Client(), srv.URL, "", false, 0, func(_ *mailbox.Event, data []byte) { kept = len(data) }, func(mailbox.Event) bool { return true })
	if kept == 0 || kept > keepEvent {
		t.Errorf("the 200 KiB snapshot's data came as %d bytes, want its head only, at most %d", kept, keepEvent)
	}
	if err == nil {
		t.Errorf("a stream cut inside a block ended without an error")
	}
	if got := atMs([]byte(`{"seq":1}`)); got != 0 {
		t.Errorf("atMs without the field = %d", got)
	}
}

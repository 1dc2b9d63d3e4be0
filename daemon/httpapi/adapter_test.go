package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// brokenService fails Compact with an error that is not a *mailbox.Error,
// the way a bug or an unexpected I/O failure would. It embeds the interface
// so that calling anything else panics: this is a unit test of the error
// adapter, not of the daemon.
type brokenService struct{ mailbox.Service }

func (brokenService) Compact(context.Context) (mailbox.CompactOutcome, error) {
	return mailbox.CompactOutcome{}, errors.New("rename /var/lib/mailroom/snap.tmp: input/output error")
}

// TestInternalErrorsAreNotShown: a non-application error is answered as a
// generic 500 and logged in full at error level; refusals log at info.
func TestInternalErrorsAreNotShown(t *testing.T) {
	var logs bytes.Buffer
	h := httpapi.New(brokenService{}, httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	base := serve(t, h)

	resp, err := http.Post(base+"/a2a/compact", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := readReply(t, resp)
	e := errorBody(t, r)
	if r.status != 500 || e.Code != mailbox.CodeInternal || strings.Contains(e.Message, "/var/lib") {
		t.Errorf("answer %d %+v, want 500 internal without the inner error", r.status, e)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "input/output error") {
		t.Errorf("log %q, want the real error at ERROR", logs.String())
	}

	logs.Reset()
	resp, err = http.Get(base + "/a2a/queue?limit=0x10")
	if err != nil {
		t.Fatal(err)
	}
	if r := readReply(t, resp); r.status != 400 {
		t.Errorf("bad limit = %d, want 400", r.status)
	}
	if !strings.Contains(logs.String(), "level=INFO") || strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("log %q, want the refusal at INFO only", logs.String())
	}
}

// movedService answers every queue read as an instance that could not
// stand behind its view would: 503, nothing changed, retry.
type movedService struct{ mailbox.Service }

func (movedService) Queue(context.Context, mailbox.QueueFilter) (mailbox.QueueView, error) {
	return mailbox.QueueView{}, &mailbox.Error{Code: mailbox.CodeUnavailable, Message: "the lead may have moved; retry",
		Details: &mailbox.ErrorDetails{Retry: mailbox.RetryLeaderChanged}}
}

// A 503 that changed nothing says so in a header a client can act on
// without reading the body, and when to try again.
func TestAnUnavailableThatChangedNothingSaysRetry(t *testing.T) {
	h := httpapi.New(movedService{}, httpapi.Options{Logger: slog.New(slog.DiscardHandler)})
	resp, err := http.Get(serve(t, h) + "/a2a/queue")
	if err != nil {
		t.Fatal(err)
	}
	r := readReply(t, resp)
	e := errorBody(t, r)
	if r.status != 503 || e.Code != mailbox.CodeUnavailable || resp.Header.Get(mailbox.HeaderRetry) != mailbox.RetryLeaderChanged || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("answer %d %+v, headers %v; want 503 with Mailroom-Retry: leader-changed and Retry-After: 1", r.status, e, resp.Header)
	}
}

// orderedService's one subscription hands out what the test feeds it.
type orderedService struct {
	mailbox.Service
	sub *fedSubscription
}

func (o orderedService) Subscribe(context.Context, *uint64) (mailbox.Subscription, error) {
	return o.sub, nil
}

type fedSubscription struct {
	events chan *mailbox.Event
	agents chan mailbox.AgentsUpdate
}

func (f *fedSubscription) Events() <-chan *mailbox.Event       { return f.events }
func (f *fedSubscription) Agents() <-chan mailbox.AgentsUpdate { return f.agents }
func (f *fedSubscription) Err() error                          { return nil }
func (f *fedSubscription) Close()                              {}

// A listing that reaches the stream before the events it counts waits for
// them: the stream gives the events first, whatever order the two channels
// are ready in.
func TestAListingWaitsForTheEventsItCounts(t *testing.T) {
	sub := &fedSubscription{events: make(chan *mailbox.Event, 8), agents: make(chan mailbox.AgentsUpdate)}
	h := httpapi.New(orderedService{sub: sub}, httpapi.Options{Logger: slog.New(slog.DiscardHandler), FlushDelay: -1})
	resp, err := http.Get(serve(t, h) + "/a2a/events?agents=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := ssetest.NewReader(resp.Body)

	sub.events <- &mailbox.Event{Seq: 0, Type: mailbox.EventSnapshot, Snapshot: &mailbox.Snapshot{}}
	if b, err := rd.NextEvent(); err != nil || b.Event != mailbox.EventSnapshot {
		t.Fatalf("first block %+v, %v; want the snapshot", b, err)
	}
	// Unbuffered: once this send returns, the stream has taken the
	// listing and must hold it.
	sub.agents <- mailbox.AgentsUpdate{Type: mailbox.EventAgents, AtMs: 1, Agents: []mailbox.AgentInfo{{Agent: "w@x", Queued: 2}}, Seq: 2}
	for seq := uint64(1); seq <= 2; seq++ {
		sub.events <- &mailbox.Event{Seq: seq, AtMs: 1, Type: mailbox.EventTaskSent,
			Task: &mailbox.Task{ID: "6f9619ff-8b86-4d11-b42d-00c04fc964f" + fmt.Sprint(seq), Sender: "p@x", Recipient: "w@x", IntentText: "x"}}
	}
	var got []string
	for len(got) < 3 {
		b, err := rd.NextEvent()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, b.Event+":"+b.ID)
	}
	if want := []string{"task_sent:1", "task_sent:2", "agents:"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the stream gave %v; want %v: the listing after the events it counts", got, want)
	}
	close(sub.events)
}

// serve runs h, wired by hand over a service no real daemon has, on
// 127.0.0.1 for the test, and returns its base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

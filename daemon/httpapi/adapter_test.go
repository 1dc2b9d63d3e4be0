package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/httpapi"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	resp, err := http.Get("http://" + ln.Addr().String() + "/a2a/queue")
	if err != nil {
		t.Fatal(err)
	}
	r := readReply(t, resp)
	e := errorBody(t, r)
	if r.status != 503 || e.Code != mailbox.CodeUnavailable || resp.Header.Get(mailbox.HeaderRetry) != mailbox.RetryLeaderChanged || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("answer %d %+v, headers %v; want 503 with Mailroom-Retry: leader-changed and Retry-After: 1", r.status, e, resp.Header)
	}
}

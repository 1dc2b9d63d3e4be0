// Package clienttest holds what the tests of the A2A client share: those
// of the client alone (daemon/a2a/remote) and those of the client against
// the daemon's own edge (daemon/a2a). Only tests import it.
package clienttest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/mailbox"
)

// Ctx is a test's context, bounded so that a remote that never answers
// fails the test instead of hanging it.
func Ctx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Resolve resolves spec or fails the test.
func Resolve(t *testing.T, ctx context.Context, spec remote.Spec, auth remote.Auth) (*remote.Client, remote.Card) {
	t.Helper()
	r, card, err := remote.Resolve(ctx, nil, spec, auth)
	if err != nil {
		t.Fatalf("remote.Resolve(%+v): %v", spec, err)
	}
	return r, card
}

// NativeTask is a mailbox task as a native sender sends it.
func NativeTask(intent string, context string) mailbox.Task {
	t := mailbox.Task{ID: NewID(), Sender: "planner@local", Recipient: "coder@local", IntentText: intent}
	if context != "" {
		t.Context = json.RawMessage(context)
	}
	return t
}

var idSeq atomic.Uint64

// NewID is a task id no other test uses.
func NewID() string {
	n := idSeq.Add(1)
	return "6f9619ff-8b86-4d11-b42d-" + strings.Repeat("0", 12-len(itoa(n))) + itoa(n)
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Outbound is the message that delivers task, or fails the test.
func Outbound(t *testing.T, task mailbox.Task, ref *remote.Ref) remote.Message {
	t.Helper()
	m, err := remote.MessageFor(task, ref)
	if err != nil {
	}
	return m
}

// Poll reads the remote task until it is finished or asks something.
func Poll(t *testing.T, ctx context.Context, r *remote.Client, id string) remote.Task {
	t.Helper()
	for {
		got, err := r.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		if got.Terminal() || got.Interrupted() {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s still %s when the test gave up", id, got.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Outcome maps a remote task to the mailbox result and checks that the
// mailbox takes it.
func Outcome(t *testing.T, rt remote.Task) mailbox.Result {
	t.Helper()
	r, final := rt.Outcome()
	if !final {
		t.Fatalf("Outcome of %+v: not final", rt)
	}
	r.TaskID = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	if _, err := mailbox.NormalizeResult(r); err != nil {
		t.Fatalf("the mailbox refuses the outcome %+v: %v", r, err)
	}
	return r
}

// Collect reads a stream to its end.
func Collect(t *testing.T, s *remote.Stream) []remote.Update {
	t.Helper()
	defer s.Close()
	var ups []remote.Update
	for {
		u, err := s.Next()
		if errors.Is(err, io.EOF) {
			return ups
		}
		if err != nil {
			t.Fatalf("stream after %d updates: %v", len(ups), err)
		}
		ups = append(ups, u)
	}
}

// ContentText is the text of a result's content, its JSON values as they are, joined by "|".
func ContentText(r mailbox.Result) string {
	var texts []string
	for _, c := range r.Content {
		if c.Type == mailbox.ContentText {
			texts = append(texts, c.Text)
		} else {
			texts = append(texts, string(c.Value))
		}
	}
	return strings.Join(texts, "|")
}

// SameJSON reports whether a and b are the same JSON value.
func SameJSON(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

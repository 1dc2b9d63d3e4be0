package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// The outbox's routes: a2a.read lists it; only a2a.admin retries or drops
// a notification; every refusal changes nothing; bad input is a 400
// naming the field.
func TestPushRoutesAccess(t *testing.T) {
	a := startAuthed(t)
	ctx := t.Context()
	for _, who := range []string{"reader", "root"} {
		l, err := a.client(t, who).Deliveries(ctx, true)
		if err != nil || l.Kind != mailbox.KindPushList || l.Notifications == nil {
			t.Errorf("%s lists the outbox: %+v, %v", who, l, err)
		}
	}
	if _, err := a.client(t, "planner@local").Deliveries(ctx, false); mailbox.ErrorCode(err) != mailbox.CodeForbidden {
		t.Errorf("planner@local lists the outbox: %v, want forbidden", err)
	}
	for _, who := range []string{"reader", "operator", "planner@local"} {
		if _, err := a.client(t, who).RetryNotification(ctx, "1-1", ""); mailbox.ErrorCode(err) != mailbox.CodeForbidden || !strings.Contains(err.Error(), "a2a.admin") {
			t.Errorf("%s retries a notification: %v, want forbidden naming a2a.admin", who, err)
		}
		if err := a.client(t, who).DropNotification(ctx, "1-1", "gone"); mailbox.ErrorCode(err) != mailbox.CodeForbidden {
			t.Errorf("%s drops a notification: %v, want forbidden", who, err)
		}
		if err := a.client(t, who).DropDeadNotification(ctx, "1-1", "gone"); mailbox.ErrorCode(err) != mailbox.CodeForbidden {
			t.Errorf("%s drops a dead notification: %v, want forbidden", who, err)
		}
	}
	root := a.client(t, "root")
	if err := root.DropNotification(ctx, "1-1", ""); mailbox.ErrorCode(err) != mailbox.CodeInvalid || !strings.Contains(err.Error(), "reason") {
		t.Errorf("a drop without a reason: %v, want invalid naming reason", err)
	}
	if err := root.DropNotification(ctx, "1-1", "gone"); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
		t.Errorf("a drop of a notification the outbox does not hold: %v, want not_found", err)
	}
	if err := root.DropDeadNotification(ctx, "1-1", "gone"); mailbox.ErrorCode(err) != mailbox.CodeNotFound {
		t.Errorf("a dead-only drop of a notification the outbox does not hold: %v, want not_found", err)
	}
	if status, body := a.do(t, http.MethodPost, "/a2a/push/1-1/retry", `{"reason":"x","dead_only":true}`, "Bearer "+a.tokens["root"]); status != http.StatusBadRequest || !strings.Contains(body, "dead_only") {
		t.Errorf("a retry with dead_only = %d %s, want 400 naming dead_only", status, body)
	}
	if status, body := a.do(t, http.MethodGet, "/a2a/push?failed=maybe", "", "Bearer "+a.tokens["root"]); status != http.StatusBadRequest || !strings.Contains(body, "failed") {
		t.Errorf("GET /a2a/push?failed=maybe = %d %s, want 400 naming failed", status, body)
	}
}

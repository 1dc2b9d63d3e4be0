package httpapi

import (
	"net/http"

	"github.com/mailroom/mailroom/mailbox"
)

// The outbox of push notifications: the operator's view and repairs.

func (a *api) pushList(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "failed")
	if err != nil {
		return err
	}
	failed := false
	if v, ok := p.get("failed"); ok {
		switch v {
		case "true":
			failed = true
		case "false":
		default:
			return mailbox.Invalidf("failed", "got %q, expected true or false", v)
		}
	}
	out, err := a.svc.Deliveries(r.Context(), failed)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) pushRetry(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var req mailbox.PushDropRequest
	if err := decodeBody(w, r, &req, "a retry request ({\"reason\": ...})"); err != nil {
		return err
	}
	if req.DeadOnly {
		return mailbox.Invalidf("dead_only", "applies to a drop; a retry takes only a dead notification anyway")
	}
	n, err := a.svc.RetryNotification(r.Context(), r.PathValue("id"), req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.PushRetried{Kind: mailbox.KindPushRetried, Notification: n})
	return nil
}

func (a *api) pushDrop(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var req mailbox.PushDropRequest
	if err := decodeBody(w, r, &req, "a drop request ({\"reason\": ...})"); err != nil {
		return err
	}
	id := r.PathValue("id")
	drop := a.svc.DropNotification
	if req.DeadOnly {
		drop = a.svc.DropDeadNotification
	}
	if err := drop(r.Context(), id, req.Reason); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.PushDropped{Kind: mailbox.KindPushDropped, ID: id})
	return nil
}

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mailroom/mailroom/mailbox"
)

// Deliveries lists the outbox of push notifications (only the failing and
// dead ones when failedOnly), with what the notifier knows of each.
func (c *Client) Deliveries(ctx context.Context, failedOnly bool) (mailbox.PushListing, error) {
	var q url.Values
	if failedOnly {
		q = url.Values{"failed": {"true"}}
	}
	var out mailbox.PushListing
	err := c.do(ctx, http.MethodGet, "/a2a/push", q, nil, &out, mailbox.KindPushList)
	return out, err
}

// RetryNotification puts a dead push notification back in line.
func (c *Client) RetryNotification(ctx context.Context, id, reason string) (mailbox.Notification, error) {
	var out mailbox.PushRetried
	err := c.do(ctx, http.MethodPost, "/a2a/push/"+url.PathEscape(id)+"/retry", nil, mailbox.PushDropRequest{Reason: reason}, &out, mailbox.KindPushRetried)
	return out.Notification, err
}

// DropNotification removes a push notification, pending or dead.
func (c *Client) DropNotification(ctx context.Context, id, reason string) error {
	return c.do(ctx, http.MethodPost, "/a2a/push/"+url.PathEscape(id)+"/drop", nil, mailbox.PushDropRequest{Reason: reason}, nil, mailbox.KindPushDropped)
}

// DropDeadNotification removes a push notification only while it is
// dead-lettered: a conflict error once it was retried (a bulk drop of
// the dead keeps one retried since it was listed).
func (c *Client) DropDeadNotification(ctx context.Context, id, reason string) error {
	return c.do(ctx, http.MethodPost, "/a2a/push/"+url.PathEscape(id)+"/drop", nil, mailbox.PushDropRequest{Reason: reason, DeadOnly: true}, nil, mailbox.KindPushDropped)
}

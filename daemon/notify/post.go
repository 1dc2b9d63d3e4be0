package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// An attempt: one POST of a notification to its webhook, and what is
// recorded of it.

// try makes attempt number attempt at notification x and records what
// came of it: acknowledged (push_delivered), or failed with its attempts
// run out (push_dead_lettered), or failed with attempts left: again, after
// wait. A retry of a notification no longer pending (dropped, its config
// deleted) is not made. When ctx ends first it stays pending for whoever
// delivers next.
func (n *Notifier) try(ctx context.Context, x mailbox.Notification, attempt int) (again bool, wait time.Duration) {
	if attempt > 1 && !n.stillPending(ctx, x.ID) {
		return false, 0
	}
	err := n.post(ctx, x)
	if ctx.Err() != nil {
		return false, 0
	}
	if err == nil {
		n.stats.delivered(time.Since(time.UnixMilli(x.CreatedAtMs)))
		if rerr := n.outbox.Delivered(ctx, x.ID, attempt); rerr != nil && mailbox.ErrorCode(rerr) != mailbox.CodeNotFound && mailbox.ErrorCode(rerr) != mailbox.CodeConflict {
			// Unknown whether it was recorded: it may be posted again,
			// with the same id.
			n.log.Warn("push notification delivered but not recorded; it may be delivered again", "notification", x.ID, "err", rerr)
		}
		return false, 0
	}
	n.stats.failed()
	if attempt >= n.o.MaxAttempts {
		if rerr := n.outbox.DeadLettered(ctx, x.ID, attempt, err.Error()); rerr != nil && ctx.Err() == nil {
			n.log.Warn("push notification: its dead letter could not be recorded; it stays pending", "notification", x.ID, "err", rerr)
		} else if rerr == nil {
			n.stats.deadLettered()
		}
		return false, 0
	}
	wait = n.backoff.After(attempt)
	n.mu.Lock()
	n.attempts[x.ID] = mailbox.PushAttempt{Attempts: attempt, LastError: err.Error(), NextTryMs: time.Now().Add(wait).UnixMilli()}
	n.mu.Unlock()
	n.log.Info("push notification failed; retrying", "notification", x.ID, "task_id", x.TaskID, "attempt", attempt, "in", wait.Round(time.Millisecond), "err", err)
	return true, wait
}

// stillPending reports whether notification id is still to be delivered
// (an operator may have dropped it, the bounds too, or its config been
// deleted).
func (n *Notifier) stillPending(ctx context.Context, id string) bool {
	ok, err := n.outbox.Pending(ctx, id)
	return ok || err != nil
}

// post makes one attempt: nil when the receiver answered 2xx.
func (n *Notifier) post(ctx context.Context, x mailbox.Notification) error {
	cfg, body, contentType, err := n.made(ctx, x)
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %v", cfg.URL, err)
	}
	if n.o.Policy != nil {
		if err := n.o.Policy.Check("url", u); err != nil {
			return err
		}
	}
	select {
	case n.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-n.sem }()
	cctx, cancel := context.WithTimeout(ctx, n.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set(HeaderID, x.ID)
	if cfg.Token != "" {
		req.Header.Set(HeaderToken, cfg.Token)
	}
	if a := cfg.Authentication; a != nil && a.Credentials != "" {
		for _, s := range a.Schemes {
			if strings.EqualFold(s, "bearer") {
				req.Header.Set("Authorization", "Bearer "+a.Credentials)
				break
			}
		}
	}
	to := n.routes.to(u.Hostname())
	resp, err := to.client.Do(req)
	if err != nil {
		remedy := tlsRemedy(err, to.keys)
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if remedy != "" {
			return fmt.Errorf("POST %s: %v (%s)", u.Redacted(), err, remedy)
		}
		return fmt.Errorf("POST %s: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", u.Redacted(), resp.Status)
	}
	return nil
}

// made is what notification x is made of now: the config (the task's,
// or its sender's webhook) it goes to, and its body.
func (n *Notifier) made(ctx context.Context, x mailbox.Notification) (cfg *mailbox.PushConfig, body []byte, contentType string, err error) {
	rec, err := n.mailbox.Task(ctx, x.TaskID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("reading task %s: %s", x.TaskID, mailbox.ErrorMessage(err))
	}
	if x.Agent != "" {
		// A native sender's webhook: a result is waiting for it.
		reg, err := n.mailbox.Registered(ctx, x.Agent)
		if err != nil || reg.Card.Webhook == nil {
			return nil, nil, "", fmt.Errorf("%s has no webhook any more", x.Agent)
		}
		c := reg.Card.Webhook.Config()
		return &c, resultWaiting(rec, x), "application/json", nil
	}
	for _, c := range rec.Push {
		if c.ID == x.ConfigID {
			cfg = &c
			break
		}
	}
	if cfg == nil {
		return nil, nil, "", fmt.Errorf("task %s has no push config %q any more", x.TaskID, x.ConfigID)
	}
	body, contentType = wire.PushBody(rec, x.Seq)
	return cfg, body, contentType, nil
}

// ResultWaiting is what a native sender's webhook is posted: a result is
// waiting for it (drain it with results/next), its task and status.
type ResultWaiting struct {
	Kind         string `json:"kind"`
	Notification string `json:"notification"`
	TaskID       string `json:"task_id"`
	Sender       string `json:"sender"`
	Recipient    string `json:"recipient"`
	Event        string `json:"event"`
	Status       string `json:"status,omitempty"`
	Seq          uint64 `json:"seq"`
}

// KindResultWaiting is ResultWaiting's kind.
const KindResultWaiting = "a2a_result_waiting"

func resultWaiting(rec mailbox.TaskRecord, x mailbox.Notification) []byte {
	w := ResultWaiting{Kind: KindResultWaiting, Notification: x.ID, TaskID: rec.Task.ID, Sender: rec.Task.Sender, Recipient: rec.Task.Recipient, Event: x.Event, Seq: x.Seq}
	for _, h := range rec.History {
		if h.Seq == x.Seq {
			w.Status = h.Status
		}
	}
	b, _ := json.Marshal(w)
	return b
}

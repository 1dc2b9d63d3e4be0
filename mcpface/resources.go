package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// Resources: every task (mailroom://tasks/{task_id}, the same view as
// get_task), which a host may subscribe to, and every registered agent's
// A2A card (mailroom://agents/{agent}/card). A subscription follows the
// daemon's event stream (which needs a2a.read) and tells the host each
// time an event changes a subscribed task.

const (
	taskURIPrefix  = "mailroom://tasks/"
	agentURIPrefix = "mailroom://agents/"
	cardURISuffix  = "/card"
)

// TaskURI is the resource URI of a task.
func TaskURI(taskID string) string { return taskURIPrefix + taskID }

// CardURI is the resource URI of an agent's card.
func CardURI(agent string) string { return agentURIPrefix + url.PathEscape(agent) + cardURISuffix }

func (f *Face) addResources() {
	f.Server.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: taskURIPrefix + "{task_id}",
		Name:        "task",
		Title:       "A task in the mailbox",
		Description: "One task as get_task shows it (state, lease, attempts, conversation), as JSON. Subscribe to be told of every change of its state. You may read the tasks you sent; others' need a2a.read, and subscriptions need a2a.read.",
		MIMEType:    "application/json",
	}, f.readTask)
	f.Server.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: agentURIPrefix + "{+agent}" + cardURISuffix,
		Name:        "agent-card",
		Title:       "An agent's card",
		Description: "A registered agent's A2A Agent Card (name, description, skills), as the daemon serves it to A2A clients.",
		MIMEType:    "application/json",
	}, f.readCard)
	// The registered agents' cards are listed as resources of their own,
	// as they are when the host asks for the list; a token without
	// a2a.read cannot list them, and reads them by the template.
	f.Server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				f.syncCards(ctx)
			}
			return next(ctx, method, req)
		}
	})
}

// syncCards makes the listed card resources the cards registered now.
func (f *Face) syncCards(ctx context.Context) {
	as, err := f.c.Agents(ctx)
	if err != nil {
		f.log.Info("the registered agents' cards are not listed as resources: the agents listing was refused", "err", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := map[string]bool{}
	for _, a := range as {
		if a.Card == nil {
			continue
		}
		uri := CardURI(a.Agent)
		now[uri] = true
		if !f.cards[uri] {
			f.Server.AddResource(&mcp.Resource{URI: uri, Name: "card of " + a.Agent, Title: a.Card.Name,
				Description: a.Card.Description, MIMEType: "application/json"}, f.readCard)
		}
	}
	var gone []string
	for uri := range f.cards {
		if !now[uri] {
			gone = append(gone, uri)
		}
	}
	f.Server.RemoveResources(gone...)
	f.cards = now
}

// taskIDOf returns the task id a task URI names.
func taskIDOf(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, taskURIPrefix)
	return id, ok && id != "" && !strings.Contains(id, "/")
}

func (f *Face) readTask(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := taskIDOf(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	rec, err := f.c.Task(ctx, id)
	if errors.Is(err, mailbox.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, refusal(err, nil)
	}
	b, err := json.Marshal(recordView(rec))
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (f *Face) readCard(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, agentURIPrefix)
	escaped, ok2 := strings.CutSuffix(rest, cardURISuffix)
	agent, err := url.PathUnescape(escaped)
	if !ok || !ok2 || err != nil || agent == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	card, err := f.c.AgentCard(ctx, agent)
	if errors.Is(err, mailbox.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, refusal(err, nil)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(card)}}}, nil
}

// subscribe starts watching a task: the task must be one the caller may
// read, and the event stream must be open (it needs a2a.read) before the
// subscription is answered, so no change after the answer is missed.
func (f *Face) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	id, ok := taskIDOf(uri)
	if !ok {
		return subscribeRefused(fmt.Errorf("uri: got %q, expected a task resource such as %s (agents' cards are not subscribable)", uri, TaskURI("6f9619ff-8b86-4d11-b42d-00c04fc964ff")))
	}
	rec, err := f.c.Task(ctx, id)
	if err != nil {
		return subscribeRefused(refusal(err, nil))
	}
	if err := f.startFollowing(ctx); err != nil {
		return subscribeRefused(err)
	}
	f.mu.Lock()
	f.watched[rec.Task.ID]++
	f.mu.Unlock()
	return nil
}

// subscribeRefused is a refused subscription as a JSON-RPC error a host can
// tell apart: invalid params (-32602, which the SDK also means for a
// resource not found), with the refusal's words. (A plain error would be
// sent with code 0.)
func subscribeRefused(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

func (f *Face) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	id, ok := taskIDOf(req.Params.URI)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watched[id]--; f.watched[id] <= 0 {
		delete(f.watched, id)
	}
	return nil
}

// follower is the event stream behind the subscriptions.
type follower struct {
	cancel context.CancelFunc
	done   chan struct{}
	// ready is closed once the stream is live; err says why it could
	// not be, when it could not.
	ready chan struct{}
	once  sync.Once
	err   error
}

func (fl *follower) stop() {
	fl.cancel()
	<-fl.done
}

func (fl *follower) settle(err error) {
	fl.once.Do(func() { fl.err = err; close(fl.ready) })
}

// startFollowing opens the event stream unless it is open, and waits until
// it is live or failed. It follows from the daemon's last event rather
// than from a snapshot: a session needs the changes, not the whole
// mailbox, and resuming from a seq misses nothing after it.
func (f *Face) startFollowing(ctx context.Context) error {
	st, err := f.c.Status(ctx)
	if err != nil {
		return refusal(err, nil)
	}
	f.mu.Lock()
	fl := f.follow
	if fl == nil {
		fctx, cancel := context.WithCancel(context.Background())
		fl = &follower{cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
		f.follow = fl
		events := f.c.SubscribeWith(fctx, st.LastSeq, client.SubscribeOptions{OnState: func(s client.ConnState) {
			switch {
			case s.Live:
				fl.settle(nil)
			case s.Err != nil:
				fl.settle(s.Err)
			}
		}})
		go f.notify(fctx, fl, events)
	}
	f.mu.Unlock()
	select {
	case <-fl.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if fl.err != nil {
		// The stream is retried no further: the next subscription opens
		// a new one.
		f.mu.Lock()
		if f.follow == fl {
			f.follow = nil
		}
		f.mu.Unlock()
		fl.stop()
		return fmt.Errorf("cannot follow the mailbox's events, so the task's changes cannot be announced: %w; read the resource (or call get_task) instead", refusal(fl.err, nil))
	}
	return nil
}

// notify tells the host of every event that changes a watched task.
func (f *Face) notify(ctx context.Context, fl *follower, events <-chan mailbox.Event) {
	defer close(fl.done)
	for ev := range events {
		fl.settle(nil)
		if ev.TaskID == "" {
			continue
		}
		f.mu.Lock()
		watched := f.watched[ev.TaskID] > 0
		f.mu.Unlock()
		if watched {
			if err := f.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: TaskURI(ev.TaskID)}); err != nil {
				f.log.Warn("could not announce a task's change", "task_id", ev.TaskID, "err", err)
			}
		}
	}
}

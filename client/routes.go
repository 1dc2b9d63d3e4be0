package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Send queues a task. Leave t.ID empty to have the daemon assign one.
func (c *Client) Send(ctx context.Context, t mailbox.Task) (mailbox.TaskQueuedResponse, error) {
	var out mailbox.TaskQueuedResponse
	err := c.do(ctx, http.MethodPost, "/a2a/tasks", nil, t, &out, mailbox.KindTaskQueued)
	return out, err
}

// SendBatch sends up to 100 tasks in one request: each is answered in its
// place, queued (with its id) or refused (an error item naming its index
// and field); the ones queued are durable together.
func (c *Client) SendBatch(ctx context.Context, tasks []mailbox.Task) ([]mailbox.BatchItem, error) {
	var out mailbox.BatchResponse
	err := c.do(ctx, http.MethodPost, "/a2a/tasks/batch", nil, struct {
		Tasks []mailbox.Task `json:"tasks"`
	}{tasks}, &out, mailbox.KindTasksBatch)
	return out.Items, err
}

// PostResults posts up to 100 results in one request, answered as
// SendBatch answers tasks.
func (c *Client) PostResults(ctx context.Context, results []mailbox.Result) ([]mailbox.BatchItem, error) {
	var out mailbox.BatchResponse
	err := c.do(ctx, http.MethodPost, "/a2a/results/batch", nil, struct {
		Results []mailbox.Result `json:"results"`
	}{results}, &out, mailbox.KindResultsBatch)
	return out.Items, err
}

// Lease leases the oldest task queued for recipient ("" = any recipient).
// Both results are nil when nothing is queued. It uses POST so that no proxy
// or retrying library ever replays a lease.
func (c *Client) Lease(ctx context.Context, recipient string) (*mailbox.Task, *mailbox.Lease, error) {
	var out mailbox.TaskOptResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/tasks/next", agentQuery("recipient", recipient), nil, &out, mailbox.KindTaskOpt); err != nil {
		return nil, nil, err
	}
	return out.Task, out.Lease, nil
}

// LeaseN leases up to n tasks for recipient ("" = any), oldest first;
// when none is queued it waits up to wait (at most 20 s) for one, and
// answers what it got, possibly nothing. The request's timeout is the
// client's plus wait.
func (c *Client) LeaseN(ctx context.Context, recipient string, n int, wait time.Duration) ([]mailbox.LeasedTask, error) {
	var out mailbox.TasksLeasedResponse
	err := c.doWithin(ctx, c.pollTimeout(wait), http.MethodPost, "/a2a/tasks/next", batchQuery("recipient", recipient, n, wait), nil, &out, mailbox.KindTasksLeased)
	return out.Leases, err
}

// DrainN drains up to n results for sender ("" = any), waiting as LeaseN
// does.
func (c *Client) DrainN(ctx context.Context, sender string, n int, wait time.Duration) ([]mailbox.PendingResult, error) {
	var out mailbox.ResultsDrainedResponse
	err := c.doWithin(ctx, c.pollTimeout(wait), http.MethodPost, "/a2a/results/next", batchQuery("sender", sender, n, wait), nil, &out, mailbox.KindResultsDrained)
	return out.Results, err
}

// pollTimeout bounds a long poll: the client's timeout plus the wait.
func (c *Client) pollTimeout(wait time.Duration) time.Duration {
	if c.timeout <= 0 {
		return 0
	}
	return c.timeout + wait
}

func batchQuery(name, agent string, n int, wait time.Duration) url.Values {
	q := agentQuery(name, agent)
	if q == nil {
		q = url.Values{}
	}
	q.Set("max", strconv.Itoa(n))
	if wait > 0 {
		q.Set("wait_ms", strconv.FormatInt(wait.Milliseconds(), 10))
	}
	return q
}

// PostResult posts the result of a leased task.
func (c *Client) PostResult(ctx context.Context, r mailbox.Result) error {
	return c.do(ctx, http.MethodPost, "/a2a/results", nil, r, nil, mailbox.KindResultPosted)
}

// Reply answers a task waiting on its sender (its worker asked with
// input_required or auth_required); r.Sender must be the task's sender.
func (c *Client) Reply(ctx context.Context, r mailbox.Reply) (mailbox.ReplyOutcome, error) {
	var out mailbox.TaskRepliedResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/tasks/"+url.PathEscape(r.TaskID)+"/reply", nil, r, &out, mailbox.KindTaskReplied); err != nil {
		return mailbox.ReplyOutcome{}, err
	}
	return out.ReplyOutcome, nil
}

// Drain takes the oldest result pending for sender ("" = any sender); nil
// when none is pending. It uses POST for the same reason as Lease.
func (c *Client) Drain(ctx context.Context, sender string) (*mailbox.PendingResult, error) {
	var out mailbox.ResultOptResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/results/next", agentQuery("sender", sender), nil, &out, mailbox.KindResultOpt); err != nil {
		return nil, err
	}
	return out.Result, nil
}

// RecentTasks lists queued tasks without consuming them; limit 0 means the
// daemon's default.
func (c *Client) RecentTasks(ctx context.Context, limit int) ([]mailbox.Task, error) {
	var out mailbox.TasksResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/tasks/recent", limitQuery(limit), nil, &out, mailbox.KindTasks); err != nil {
		return nil, err
	}
	return out.Tasks, nil
}

// RecentResults lists pending results without consuming them.
func (c *Client) RecentResults(ctx context.Context, limit int) ([]mailbox.PendingResult, error) {
	var out mailbox.ResultsResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/results/recent", limitQuery(limit), nil, &out, mailbox.KindResults); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// Queue returns queue entries and pending results; the filters apply before
// the limit.
func (c *Client) Queue(ctx context.Context, f mailbox.QueueFilter) (mailbox.QueueView, error) {
	q := limitQuery(f.Limit)
	if f.MinLeaseAgeMs != nil {
		q.Set("min_lease_age_ms", strconv.FormatInt(*f.MinLeaseAgeMs, 10))
	}
	if f.DeadlineWithinMs != nil {
		q.Set("deadline_within_ms", strconv.FormatInt(*f.DeadlineWithinMs, 10))
	}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	var out mailbox.QueueResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/queue", q, nil, &out, mailbox.KindQueue); err != nil {
		return mailbox.QueueView{}, err
	}
	return mailbox.QueueView{Tasks: out.Tasks, Results: out.Results}, nil
}

// Repair requeues or force-errors an in-flight task, moves or cancels a
// queued one, or hands one over to another sender. A lease-guard conflict
// is a *mailbox.Error with code conflict whose Details name the expected and
// the current lease.
func (c *Client) Repair(ctx context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error) {
	var out mailbox.RepairedResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/repair", nil, req, &out, mailbox.KindRepaired); err != nil {
		return mailbox.RepairOutcome{}, err
	}
	return out.Outcome, nil
}

// HandOver makes to the sender of a task waiting on its sender (its
// question to answer, or its result to drain), guarded by sentBy, the
// sender the caller saw ("" for no guard); newAgent confirms a to the
// mailbox does not know. A stale guard is a *mailbox.Error with code
// conflict and field command.sent_by.
func (c *Client) HandOver(ctx context.Context, taskID, sentBy, to, reason string, newAgent bool) (mailbox.RepairOutcome, error) {
	return c.Repair(ctx, mailbox.RepairRequest{TaskID: taskID, Reason: reason,
		Command: mailbox.RepairCommand{Action: mailbox.ActionHandOver, Sender: to, SentBy: sentBy, NewAgent: newAgent}})
}

// Compact asks the daemon to snapshot its state and start a new log.
func (c *Client) Compact(ctx context.Context) (mailbox.CompactOutcome, error) {
	var out mailbox.CompactedResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/compact", nil, nil, &out, mailbox.KindCompacted); err != nil {
		return mailbox.CompactOutcome{}, err
	}
	return out.CompactOutcome, nil
}

// RetryStale runs the retry-stale scan with policy p. Unless p.Enabled it is
// a dry run: the report says what would be requeued and nothing changes.
// The whole policy is sent, so the caller's defaults are the ones applied.
func (c *Client) RetryStale(ctx context.Context, p mailbox.RetryPolicy) (mailbox.RetryReport, error) {
	var out mailbox.AutoRetryResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/retry-stale", nil, p, &out, mailbox.KindAutoRetry); err != nil {
		return mailbox.RetryReport{}, err
	}
	return out.Report, nil
}

// Audit lists repairs, newest first: every one when taskID is "", else
// that task's. limit 0 means the daemon's default.
func (c *Client) Audit(ctx context.Context, taskID string, limit int) ([]mailbox.AuditRecord, error) {
	q := limitQuery(limit)
	if taskID != "" {
		q.Set("task_id", taskID)
	}
	var out mailbox.AuditResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/audit", q, nil, &out, mailbox.KindAudit); err != nil {
		return nil, err
	}
	return out.Repairs, nil
}

// WhoAmI asks whom the client's token speaks for. Without tokens configured
// the daemon answers Auth false and no principal.
func (c *Client) WhoAmI(ctx context.Context) (mailbox.WhoAmI, error) {
	var out mailbox.WhoAmI
	err := c.do(ctx, http.MethodGet, "/a2a/whoami", nil, nil, &out, mailbox.KindWhoAmI)
	return out, err
}

// Agents lists every agent the daemon knows or has heard from, sorted by
// agent id, with its queue, leases, pending results, recent results and when
// it last called the daemon.
func (c *Client) Agents(ctx context.Context) ([]mailbox.AgentInfo, error) {
	var out mailbox.AgentsResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/agents", nil, nil, &out, mailbox.KindAgents); err != nil {
		return nil, err
	}
	return out.Agents, nil
}

// AgentsWithSkill lists the registered agents whose card lists skill.
func (c *Client) AgentsWithSkill(ctx context.Context, skill string) ([]mailbox.AgentInfo, error) {
	var out mailbox.AgentsResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/agents", url.Values{"skill": {skill}}, nil, &out, mailbox.KindAgents); err != nil {
		return nil, err
	}
	return out.Agents, nil
}

// RegisterAgent registers agent's card (or replaces the one it has); the
// daemon serves the agent as an A2A server from then on.
func (c *Client) RegisterAgent(ctx context.Context, agent string, card mailbox.AgentCard) (mailbox.RegisteredAgent, error) {
	var out mailbox.AgentRegisteredResponse
	err := c.do(ctx, http.MethodPut, "/a2a/agents/"+agent, nil, card, &out, mailbox.KindAgentRegistered)
	return out.Agent, err
}

// DeregisterAgent removes agent's card; its tasks stay.
func (c *Client) DeregisterAgent(ctx context.Context, agent string) error {
	return c.do(ctx, http.MethodDelete, "/a2a/agents/"+agent, nil, nil, nil, mailbox.KindAgentDeregistered)
}

// Health returns nil when the daemon is up and its mailbox answers.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.Status(ctx)
	return err
}

// Status returns the mailbox's totals and the seq of its last durable
// event, as GET /healthz answers every caller, token or not.
func (c *Client) Status(ctx context.Context) (mailbox.Status, error) {
	var out struct {
		mailbox.Counts
		LastSeq uint64             `json:"last_seq"`
		Store   *mailbox.StoreRole `json:"store"`
	}
	err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, &out, mailbox.KindHealth)
	return mailbox.Status{Counts: out.Counts, LastSeq: out.LastSeq, Store: out.Store}, err
}

// Metrics returns the daemon's metrics in the Prometheus text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	b, err := c.metrics(ctx, nil)
	return string(b), err
}

// MetricsJSON returns the daemon's metrics as JSON, one key per metric: a
// number for a gauge or counter, a list of {labels, value} for a labeled
// counter, {buckets, sum, count} for a histogram.
func (c *Client) MetricsJSON(ctx context.Context) (map[string]json.RawMessage, error) {
	b, err := c.metrics(ctx, url.Values{"format": {"json"}})
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("the daemon's JSON metrics do not decode: %w", err)
	}
	return out, nil
}

func (c *Client) metrics(ctx context.Context, q url.Values) ([]byte, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/metrics", q), nil)
	if err != nil {
		return nil, err
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.refusal(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	return b, nil
}

func agentQuery(name, agent string) url.Values {
	if agent == "" {
		return nil
	}
	return url.Values{name: {agent}}
}

func limitQuery(limit int) url.Values {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// Task returns what the daemon remembers of one task: its state, lease,
// history and conversation. A caller reads the tasks it sent; others'
// need a2a.read.
func (c *Client) Task(ctx context.Context, id string) (mailbox.TaskRecord, error) {
	var out mailbox.TaskResponse
	if err := c.do(ctx, http.MethodGet, "/a2a/tasks/"+url.PathEscape(id), nil, nil, &out, mailbox.KindTask); err != nil {
		return mailbox.TaskRecord{}, err
	}
	return out.TaskRecord, nil
}

// Cancel ends a queued, in-flight or waiting task and returns it as it now
// stands. A caller cancels the tasks it sent; others' need a2a.admin.
func (c *Client) Cancel(ctx context.Context, id, reason string) (mailbox.TaskRecord, error) {
	var out mailbox.TaskResponse
	if err := c.do(ctx, http.MethodPost, "/a2a/tasks/"+url.PathEscape(id)+"/cancel", nil, mailbox.CancelRequest{Reason: reason}, &out, mailbox.KindTaskCanceled); err != nil {
		return mailbox.TaskRecord{}, err
	}
	return out.TaskRecord, nil
}

// AgentCard returns a registered agent's A2A Agent Card as the daemon
// serves it to every A2A client (public, no token needed), verbatim. An
// agent without a card is a *mailbox.Error with code not_found.
func (c *Client) AgentCard(ctx context.Context, agent string) ([]byte, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url("/agents/"+url.PathEscape(agent)+"/.well-known/agent-card.json", nil), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, mailbox.MaxBodyBytes))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return b, nil
	case resp.StatusCode == http.StatusNotFound:
		return nil, &mailbox.Error{Code: mailbox.CodeNotFound, Message: "agent: " + agent + " has no registered card (see list_agents, or 'mailroom agent register')",
			Details: &mailbox.ErrorDetails{Field: "agent"}}
	default:
		return nil, &mailbox.Error{Code: mailbox.CodeForStatus(resp.StatusCode), Message: fmt.Sprintf("the daemon answered %s for %s's card", resp.Status, agent)}
	}
}

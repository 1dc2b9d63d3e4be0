package covenant

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mailroom/mailroom/daemon/httpapi"
	"github.com/mailroom/mailroom/mailbox"
)

// defaultLimit is what Covenant's gateway lists when the query gives no
// limit (its LimitParams' unwrap_or(10)).
const defaultLimit = 10

func (e *Edge) health(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
	}{"ok"})
	return nil
}

// version answers Covenant's wire check, as its gateway's /version does
// (covenant-ipc's protocol_info, v1: the buffered answers this dialect
// gives), so that a client that checks before it presents a token goes
// on to the a2a routes.
func (e *Edge) version(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	type info struct {
		Protocol     string `json:"protocol"`
		Version      int    `json:"version"`
		MinSupported int    `json:"min_supported"`
		MaxSupported int    `json:"max_supported"`
	}
	writeJSON(w, http.StatusOK, struct {
		Kind string `json:"kind"`
		Info info   `json:"info"`
	}{"protocol_info", info{"covenant.ipc", 1, 1, 1}})
	return nil
}

func (e *Edge) sendTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	var t Task
	if err := httpapi.DecodeBody(w, r, &t, "an A2ATask"); err != nil {
		return err
	}
	mt, err := toMailboxTask(t)
	if err != nil {
		return err
	}
	res, err := e.svc.Send(r.Context(), mt)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskQueued{Kind: KindTaskQueued, TaskID: res.TaskID})
	return nil
}

// leaseTask leases the oldest task queued for the caller, as Covenant's
// peer-scoped try_recv does.
func (e *Edge) leaseTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	t, _, err := e.svc.Lease(r.Context(), peer(r.Context()))
	if err != nil {
		return err
	}
	out := taskOpt{Kind: KindTaskOpt}
	if t != nil {
		ct := fromMailboxTask(*t)
		out.Task = &ct
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (e *Edge) recentTasks(w http.ResponseWriter, r *http.Request) error {
	q, err := httpapi.Query(r, "limit")
	if err != nil {
		return err
	}
	limit, err := limitOf(q)
	if err != nil {
		return err
	}
	tasks, err := e.svc.RecentTasks(r.Context(), limit)
	if err != nil {
		return err
	}
	out := tasksList{Kind: KindTasks, Tasks: make([]Task, len(tasks))}
	for i, t := range tasks {
		out.Tasks[i] = fromMailboxTask(t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (e *Edge) postResult(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	var res Result
	if err := httpapi.DecodeBody(w, r, &res, "an A2ATaskResult"); err != nil {
		return err
	}
	if err := e.svc.PostResult(r.Context(), toMailboxResult(res)); err != nil {
		return err
	}
	// Accepted, so a UUID: answered in the form the mailbox keeps.
	id, _ := mailbox.CanonicalUUID("task_id", res.TaskID)
	writeJSON(w, http.StatusOK, resultPosted{Kind: KindResultPosted, TaskID: id})
	return nil
}

// drainResult drains the oldest result for a task the caller sent.
func (e *Edge) drainResult(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	res, err := e.svc.Drain(r.Context(), peer(r.Context()))
	if err != nil {
		return err
	}
	out := resultOpt{Kind: KindResultOpt}
	if res != nil {
		cr := fromMailboxResult(res.Result)
		out.Result = &cr
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (e *Edge) recentResults(w http.ResponseWriter, r *http.Request) error {
	q, err := httpapi.Query(r, "limit")
	if err != nil {
		return err
	}
	limit, err := limitOf(q)
	if err != nil {
		return err
	}
	results, err := e.svc.RecentResults(r.Context(), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resultsList{Kind: KindResults, Results: fromMailboxResults(results)})
	return nil
}

func (e *Edge) queue(w http.ResponseWriter, r *http.Request) error {
	q, err := httpapi.Query(r, "limit", "min_lease_age_ms", "deadline_within_ms", "state_filter")
	if err != nil {
		return err
	}
	var f mailbox.QueueFilter
	if f.Limit, err = limitOf(q); err != nil {
		return err
	}
	if f.MinLeaseAgeMs, err = millis(q, "min_lease_age_ms"); err != nil {
		return err
	}
	if f.DeadlineWithinMs, err = millis(q, "deadline_within_ms"); err != nil {
		return err
	}
	if q.Has("state_filter") {
		switch f.State = q.Get("state_filter"); f.State {
		case mailbox.TaskQueued, mailbox.TaskInFlight:
		default:
			return mailbox.Invalidf("state_filter", "got %q, expected \"queued\" or \"in_flight\"", f.State)
		}
	}
	view, err := e.svc.Queue(r.Context(), f)
	if err != nil {
		return err
	}
	out := queueView{Kind: KindQueue, Tasks: make([]QueueEntry, 0, len(view.Tasks)), Results: fromMailboxResults(view.Results)}
	for _, t := range view.Tasks {
		// Covenant's queue states are queued and in_flight; a task
		// waiting on its sender's reply is in neither, and its client
		// would refuse the whole listing for it.
		if t.State == mailbox.TaskWaiting {
			continue
		}
		out.Tasks = append(out.Tasks, fromQueueEntry(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (e *Edge) repair(w http.ResponseWriter, r *http.Request) error {
	if _, err := httpapi.Query(r); err != nil {
		return err
	}
	var req RepairRequest
	if err := httpapi.DecodeBody(w, r, &req, "an A2ARepairRequest"); err != nil {
		return err
	}
	mr, err := toMailboxRepair(req)
	if err != nil {
		return err
	}
	out, err := e.svc.Repair(r.Context(), mr)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, repaired{Kind: KindRepaired, Outcome: fromRepairOutcome(out)})
	return nil
}

// peer is whom a lease or a drain is for: the agent the caller's token
// names, as Covenant scopes its receives to the bearer's peer. A caller
// that is no agent (no tokens, or an operator's name) takes from every
// agent, as the native routes' lease without a recipient does; the guard
// still decides what it may take.
func peer(ctx context.Context) string {
	p := mailbox.PrincipalFrom(ctx)
	if mailbox.ValidateAgentID("", p) != nil {
		return ""
	}
	return p
}

// limitOf reads the limit parameter, Covenant's default when absent; the
// service checks its range.
func limitOf(q url.Values) (int, error) {
	if !q.Has("limit") {
		return defaultLimit, nil
	}
	v := q.Get("limit")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, mailbox.Invalidf("limit", "got %q, expected an integer from 1 to %d", v, mailbox.MaxLimit)
	}
	return n, nil
}

// millis reads a duration parameter, nil when absent; the service checks
// its range.
func millis(q url.Values, name string) (*int64, error) {
	if !q.Has(name) {
		return nil, nil
	}
	v := q.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, mailbox.Invalidf(name, "got %q, expected milliseconds from 0 to %d (100 years)", v, mailbox.MaxDurationMs)
	}
	return &n, nil
}

// noBody refuses a body where the route reads none, naming where its
// parameters go.
func noBody(r *http.Request, where string) error { return httpapi.NoBody(r, where) }

// writeJSON writes v as the answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Authorization") // answers depend on the caller's token
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

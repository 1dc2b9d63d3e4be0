package httpapi

import (
	"net/http"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/internal/strictjson"
	"github.com/mailroom/mailroom/mailbox"
)

func (a *api) sendTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var t mailbox.Task
	if err := decodeBody(w, r, &t, "a task"); err != nil {
		return err
	}
	if t.A2A != nil {
		return mailbox.Invalidf("a2a", "set only by the A2A edge; send A2A messages to /agents/%s/ (message/send), or omit the field", t.Recipient)
	}
	if t.Covenant != nil {
		return mailbox.Invalidf("covenant", "set only by Covenant's dialect; send Covenant's tasks to /compat/covenant/a2a/tasks, or omit the field")
	}
	res, err := a.svc.Send(r.Context(), t)
	if err != nil {
		return err
	}
	res.Kind = mailbox.KindTaskQueued
	writeJSON(w, http.StatusOK, res)
	return nil
}

// leaseTask serves GET and POST alike. The recipient travels in the query
// so both methods read the same; a body is refused (see bodiless).
// With max it leases up to max tasks and answers a list; with wait_ms it
// waits that long for a task when none is queued (a long poll).
func (a *api) leaseTask(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "recipient", "max", "wait_ms")
	if err != nil {
		return err
	}
	recipient, err := p.agent("recipient")
	if err != nil {
		return err
	}
	n, list, wait, err := p.batch(a.opts.BatchMax)
	if err != nil {
		return err
	}
	got, err := a.svc.LeaseN(r.Context(), recipient, n, wait)
	if err != nil {
		return err
	}
	if list {
		writeJSON(w, http.StatusOK, mailbox.TasksLeasedResponse{Kind: mailbox.KindTasksLeased, Leases: nonNil(got)})
		return nil
	}
	out := mailbox.TaskOptResponse{Kind: mailbox.KindTaskOpt}
	if len(got) > 0 {
		out.Task, out.Lease = &got[0].Task, &got[0].Lease
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) recentTasks(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "limit")
	if err != nil {
		return err
	}
	limit, err := p.limit()
	if err != nil {
		return err
	}
	tasks, err := a.svc.RecentTasks(r.Context(), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.TasksResponse{Kind: mailbox.KindTasks, Tasks: nonNil(tasks)})
	return nil
}

func (a *api) postResult(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var res mailbox.Result
	if err := decodeBody(w, r, &res, "a result"); err != nil {
		return err
	}
	if err := a.svc.PostResult(r.Context(), res); err != nil {
		return err
	}
	// The service accepted the id, so it is a UUID: answer it in the form
	// the mailbox keeps.
	id, _ := mailbox.CanonicalUUID("task_id", res.TaskID)
	writeJSON(w, http.StatusOK, mailbox.ResultPostedResponse{Kind: mailbox.KindResultPosted, TaskID: id})
	return nil
}

// reply answers a task waiting on its sender.
func (a *api) reply(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var rep mailbox.Reply
	if err := decodeBody(w, r, &rep, "a reply"); err != nil {
		return err
	}
	if rep.A2A != nil {
		return mailbox.Invalidf("a2a", "set only by the A2A edge; answer an A2A task with a message naming its taskId, or omit the field")
	}
	rep.TaskID = r.PathValue("id")
	out, err := a.svc.Reply(r.Context(), rep)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.TaskRepliedResponse{Kind: mailbox.KindTaskReplied, ReplyOutcome: out})
	return nil
}

// getTask answers what the mailbox remembers of one task: its sender
// reads it, anyone else needs a2a.read (the guard decides).
func (a *api) getTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	rec, err := a.svc.Task(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.TaskResponse{Kind: mailbox.KindTask, TaskRecord: rec})
	return nil
}

// cancelTask ends a queued, in-flight or waiting task, as the A2A edge's
// cancel does: its sender cancels it, anyone else needs a2a.admin.
func (a *api) cancelTask(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var req mailbox.CancelRequest
	if err := decodeBody(w, r, &req, "a cancel"); err != nil {
		return err
	}
	rec, err := a.svc.Cancel(r.Context(), r.PathValue("id"), req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.TaskResponse{Kind: mailbox.KindTaskCanceled, TaskRecord: rec})
	return nil
}

// drainResult serves GET and POST alike, like leaseTask.
// drainResult drains as leaseTask leases: max for a list, wait_ms to wait.
func (a *api) drainResult(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "sender", "max", "wait_ms")
	if err != nil {
		return err
	}
	sender, err := p.agent("sender")
	if err != nil {
		return err
	}
	n, list, wait, err := p.batch(a.opts.BatchMax)
	if err != nil {
		return err
	}
	got, err := a.svc.DrainN(r.Context(), sender, n, wait)
	if err != nil {
		return err
	}
	if list {
		writeJSON(w, http.StatusOK, mailbox.ResultsDrainedResponse{Kind: mailbox.KindResultsDrained, Results: nonNil(got)})
		return nil
	}
	out := mailbox.ResultOptResponse{Kind: mailbox.KindResultOpt}
	if len(got) > 0 {
		out.Result = &got[0]
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) recentResults(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "limit")
	if err != nil {
		return err
	}
	limit, err := p.limit()
	if err != nil {
		return err
	}
	results, err := a.svc.RecentResults(r.Context(), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.ResultsResponse{Kind: mailbox.KindResults, Results: nonNil(results)})
	return nil
}

func (a *api) queue(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "limit", "min_lease_age_ms", "deadline_within_ms", "state", "agent")
	if err != nil {
		return err
	}
	var f mailbox.QueueFilter
	if f.Agent, err = p.agent("agent"); err != nil {
		return err
	}
	if f.Limit, err = p.limit(); err != nil {
		return err
	}
	if f.MinLeaseAgeMs, err = p.millis("min_lease_age_ms"); err != nil {
		return err
	}
	if f.DeadlineWithinMs, err = p.millis("deadline_within_ms"); err != nil {
		return err
	}
	var given bool
	if f.State, given = p.get("state"); given && f.State == "" {
		return mailbox.Invalidf("state", "got \"\", expected \"queued\", \"in_flight\" or \"waiting\"; omit the parameter for all three")
	}
	view, err := a.svc.Queue(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.QueueResponse{Kind: mailbox.KindQueue, Tasks: nonNil(view.Tasks), Results: nonNil(view.Results)})
	return nil
}

func (a *api) repair(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var req mailbox.RepairRequest
	if err := decodeBody(w, r, &req, "a repair request"); err != nil {
		return err
	}
	out, err := a.svc.Repair(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.RepairedResponse{Kind: mailbox.KindRepaired, Outcome: out})
	return nil
}

func (a *api) compact(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	out, err := a.svc.Compact(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.CompactedResponse{Kind: mailbox.KindCompacted, CompactOutcome: out})
	return nil
}

// retryStale runs the retry-stale scan. Fields the body leaves out take the
// documented defaults; without "enabled": true it is a dry run.
func (a *api) retryStale(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	p := mailbox.DefaultRetryPolicy()
	if r.ContentLength != 0 {
		if err := decodeBody(w, r, &p, "a retry-stale policy"); err != nil {
			return err
		}
	}
	rep, err := a.svc.RetryStale(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.AutoRetryResponse{Kind: mailbox.KindAutoRetry, Report: rep})
	return nil
}

func (a *api) audit(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "limit", "task_id")
	if err != nil {
		return err
	}
	limit, err := p.limit()
	if err != nil {
		return err
	}
	taskID, has := p.get("task_id")
	if has && taskID == "" {
		// Present but empty must not mean "every task".
		return mailbox.Invalidf("task_id", "got \"\", expected a task's UUID; omit the parameter to list every repair")
	}
	recs, err := a.svc.Audit(r.Context(), taskID, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.AuditResponse{Kind: mailbox.KindAudit, Repairs: nonNil(recs)})
	return nil
}

// whoami tells the caller whom its token speaks for: the console shows it.
func (a *api) whoami(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	// Every configured token has a principal; only the unauthenticated
	// loopback mode has none.
	id := auth.IdentityFrom(r.Context())
	writeJSON(w, http.StatusOK, mailbox.WhoAmI{Kind: mailbox.KindWhoAmI, Principal: id.Principal, Capabilities: id.Capabilities(), Auth: id.Principal != ""})
	return nil
}

// HealthResponse answers GET /healthz: the daemon is up and its mailbox
// answers.
type HealthResponse struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	LastSeq uint64 `json:"last_seq"`
	mailbox.Counts
	// Store is this instance's part in a shared store (PostgreSQL);
	// absent on a local log.
	Store *StoreStatus `json:"store,omitempty"`
}

// StoreStatus is an instance's role in a shared store.
type StoreStatus = mailbox.StoreRole

func (a *api) health(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	st := a.svc.Status()
	resp := HealthResponse{Kind: mailbox.KindHealth, Status: "ok", LastSeq: st.LastSeq, Counts: st.Counts}
	if a.opts.Store != nil {
		resp.Store = a.opts.Store()
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// nonNil keeps empty lists as [] on the wire: clients should not have to
// tell null from empty.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// batchBody is a batch request: its items are decoded one by one, so a
// malformed item is refused in its place and the others still go.
type batchBody struct {
	Tasks   []strictjson.Deferred `json:"tasks,omitempty"`
	Results []strictjson.Deferred `json:"results,omitempty"`
}

// batchWhole is a batch decoded whole, typed, in one pass (decodeBatch).
type batchWhole[T any] struct {
	Tasks   []T `json:"tasks"`
	Results []T `json:"results"`
}

// decodeBatch decodes a batch request's items (list is "tasks" or
// "results"; item names one, "a task") and checks its size. refused is
// nil when every item decoded; otherwise refused[i] says why item i was
// refused, in its place, as its own request would be.
//
// Decoding the whole body at once is the common case's one pass instead of
// three (the list, then each item twice), and it is only taken when it
// succeeds: the strict check and the decoder refuse at least what they
// refuse in an item alone (they walk the same item types, two levels
// deeper), so a batch that decodes whole has no item that would be
// refused alone, and each item decodes to the same value either way
// (FuzzBatchDecodesAsItsItems). Otherwise the list is read item by item.
func decodeBatch[T any](w http.ResponseWriter, r *http.Request, list, item string, most int) (items []T, refused []error, err error) {
	desc := "a batch: {\"" + list + "\": [...]}"
	body, err := readBody(w, r, desc)
	if err != nil {
		return nil, nil, err
	}
	var whole batchWhole[T]
	if decodeJSON(body, &whole, desc) == nil {
		items, other := whole.Tasks, whole.Results
		if list == "results" {
			items, other = whole.Results, whole.Tasks
		}
		if other == nil && len(items) >= 1 && len(items) <= most {
			return items, nil, nil
		}
	}
	raw, err := readBatch(body, list, most)
	if err != nil {
		return nil, nil, err
	}
	items, refused = make([]T, len(raw)), make([]error, len(raw))
	for i, b := range raw {
		refused[i] = decodeJSON(b, &items[i], item)
	}
	return items, refused, nil
}

// readBatch decodes a batch request's list (list is "tasks" or "results")
// from its body and checks its size.
func readBatch(body []byte, list string, most int) ([]strictjson.Deferred, error) {
	var b batchBody
	if err := decodeJSON(body, &b, "a batch: {\""+list+"\": [...]}"); err != nil {
		return nil, err
	}
	items := b.Tasks
	other := b.Results != nil
	if list == "results" {
		items, other = b.Results, b.Tasks != nil
	}
	switch {
	case other:
		return nil, mailbox.InvalidBodyf(list, "this route takes %q, a list of %s", list, list)
	case items == nil:
		return nil, mailbox.Invalidf(list, "missing, expected a list of 1 to %d %s", most, list)
	case len(items) == 0 || len(items) > most:
		return nil, mailbox.Invalidf(list, "got %d items, expected 1 to %d (the daemon's batch_max)", len(items), most)
	}
	return items, nil
}

// sendBatch queues each task of the batch, answering each in its place.
func (a *api) sendBatch(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	decoded, refused, err := decodeBatch[mailbox.Task](w, r, "tasks", "a task", a.opts.BatchMax)
	if err != nil {
		return err
	}
	out := make([]mailbox.BatchItem, len(decoded))
	tasks := make([]mailbox.Task, 0, len(decoded))
	var at []int
	for i, t := range decoded {
		var err error
		if refused != nil {
			err = refused[i]
		}
		if err == nil && t.A2A != nil {
			err = mailbox.Invalidf("a2a", "set only by the A2A edge; omit the field")
		}
		if err == nil && t.Covenant != nil {
			err = mailbox.Invalidf("covenant", "set only by Covenant's dialect; omit the field")
		}
		if err != nil {
			out[i] = mailbox.Refused("tasks", i, err)
			continue
		}
		tasks, at = append(tasks, t), append(at, i)
	}
	if err := a.batchInto(out, at, func() ([]mailbox.BatchItem, error) { return a.svc.SendBatch(r.Context(), tasks) }, "tasks"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.BatchResponse{Kind: mailbox.KindTasksBatch, Items: out})
	return nil
}

// postResults posts each result of the batch, answering each in its place.
func (a *api) postResults(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	decoded, refused, err := decodeBatch[mailbox.Result](w, r, "results", "a result", a.opts.BatchMax)
	if err != nil {
		return err
	}
	out := make([]mailbox.BatchItem, len(decoded))
	results := make([]mailbox.Result, 0, len(decoded))
	var at []int
	for i, res := range decoded {
		if refused != nil && refused[i] != nil {
			out[i] = mailbox.Refused("results", i, refused[i])
			continue
		}
		results, at = append(results, res), append(at, i)
	}
	if err := a.batchInto(out, at, func() ([]mailbox.BatchItem, error) { return a.svc.PostResults(r.Context(), results) }, "results"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.BatchResponse{Kind: mailbox.KindResultsBatch, Items: out})
	return nil
}

// batchInto calls the service with the items that decoded (at their
// places at) and puts its answers in out, numbered as the request numbered
// them.
func (a *api) batchInto(out []mailbox.BatchItem, at []int, call func() ([]mailbox.BatchItem, error), list string) error {
	if len(at) == 0 {
		return nil
	}
	got, err := call()
	if err != nil {
		return err
	}
	mailbox.Place(list, out, at, got)
	return nil
}

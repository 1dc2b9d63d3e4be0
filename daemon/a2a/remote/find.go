package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// Asking a remote whether it holds a task the daemon may have sent it:
// after a restart, a takeover or a cut connection, a delivery whose
// acceptance was never recorded is settled by asking rather than left to
// the operator. The first message of every delivery carries a contextId
// derived from the mailbox task (ContextIDFor), and A2A v1.0's ListTasks
// filters by it; its messageId is the mailbox task id.

// contextNamespace makes the context id of each task's first message.
var contextNamespace = uuid.MustParse("6f1d2a0c-3b7e-4c55-9a18-636f6e746578")

// ContextIDFor is the contextId the daemon gives the first message that
// delivers mailbox task taskID: a UUID derived from it (version 5), the
// same on every send, so that the remote's tasks of that context are the
// ones made of this mailbox task.
func ContextIDFor(taskID string) string {
	return uuid.NewSHA1(contextNamespace, []byte(taskID)).String()
}

// ErrCannotList: the remote cannot be asked which tasks it holds
// (A2A v0.3 and the legacy dialect have no ListTasks; a v1.0 remote may
// not implement it). The Error's message says which.
var ErrCannotList = errors.New("the remote cannot be asked which tasks it holds")

// CanList reports whether the remote may be asked which tasks it holds
// (its binding has ListTasks: v1.0). Find says for sure.
func (c *Client) CanList() bool {
	return c.binding == mailbox.BindingJSONRPC10 || c.binding == mailbox.BindingHTTPJSON10
}

// listPages bounds the pages Find reads of one context's tasks (a context
// holds the tasks made of one mailbox task: one, or a few resends).
const listPages = 10

// Find asks the remote for the task it made of the first message that
// delivered mailbox task taskID: ListTasks filtered by ContextIDFor(taskID)
// (v1.0 JSON-RPC and HTTP+JSON). found reports whether it holds one; a
// nil error with found false means the remote answered a list that would
// include it, and it is not there. Of several (an idempotent task sent
// more than once) the first listed that is not finished wins, else the
// first. An error matching ErrCannotList says the remote cannot be
// asked; any other is the call's failure (try again later).
func (c *Client) Find(ctx context.Context, taskID string) (t Task, found bool, err error) {
	cid := ContextIDFor(taskID)
	switch c.binding {
	case mailbox.BindingJSONRPC03:
		return t, false, &Error{Kind: Unusable, Op: "find", cause: ErrCannotList,
			Message: "the remote speaks A2A v0.3, which has no way to list tasks (ListTasks is v1.0): whether it holds the task cannot be asked"}
	case mailbox.BindingLegacy:
		return t, false, &Error{Kind: Unusable, Op: "find", cause: ErrCannotList,
			Message: "the legacy tasks/send dialect has no way to list tasks: whether the remote holds the task cannot be asked"}
	}
	var all []Task
	token := ""
	for page := 0; page < listPages; page++ {
		var raw json.RawMessage
		op := "ListTasks"
		if c.binding == mailbox.BindingHTTPJSON10 {
			op = "GET tasks"
			q := url.Values{"contextId": {cid}, "pageSize": {"100"}}
			if token != "" {
				q.Set("pageToken", token)
			}
			raw, err = c.rest(ctx, http.MethodGet, "tasks?"+q.Encode(), nil)
		} else {
			params := obj{"contextId": cid, "pageSize": 100}
			if token != "" {
				params["pageToken"] = token
			}
			raw, err = c.rpc(ctx, "ListTasks", params)
		}
		if err != nil {
			return t, false, cannotList(err)
		}
		var list struct {
			Tasks         []json.RawMessage `json:"tasks"`
			NextPageToken string            `json:"nextPageToken"`
		}
		if !wire.IsObject(raw) || json.Unmarshal(raw, &list) != nil {
			return t, false, &Error{Kind: Malformed, Op: op, Message: "expected a ListTasksResponse object; the answer began " + c.auth.excerpt(raw)}
		}
		for i, tr := range list.Tasks {
			rt, err := decodeRemoteTask(wire.V10, tr, "tasks["+strconv.Itoa(i)+"]")
			if err != nil {
				return t, false, &Error{Kind: Malformed, Op: op, Message: c.auth.scrub(err.Error())}
			}
			// A remote that ignores the filter lists other contexts too.
			if rt.ContextID == cid {
				all = append(all, rt)
			}
		}
		if list.NextPageToken == "" || list.NextPageToken == token {
			break
		}
		token = list.NextPageToken
	}
	if len(all) == 0 {
		return t, false, nil
	}
	for _, rt := range all {
		if !rt.Terminal() {
			return rt, true, nil
		}
	}
	return all[0], true, nil
}

// cannotList marks a refusal that says the remote has no ListTasks (the
// method is unknown or unsupported, or the route is not there) as
// ErrCannotList; other errors are returned as they are.
func cannotList(err error) error {
	var re *Error
	if !errors.As(err, &re) {
		return err
	}
	if errors.Is(err, ErrUnsupported) || re.HTTPStatus == http.StatusNotImplemented ||
		re.Kind == Refused && (re.HTTPStatus == http.StatusNotFound || re.HTTPStatus == http.StatusMethodNotAllowed) {
		return &Error{Kind: Unusable, Op: re.Op, Code: re.Code, HTTPStatus: re.HTTPStatus, cause: ErrCannotList,
			Message: "the remote does not list tasks (" + re.Message + "): whether it holds the task cannot be asked"}
	}
	return err
}

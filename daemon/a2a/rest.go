package a2a

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// rest serves the v1.0 HTTP+JSON binding under the agent's base URL:
//
//	POST message:send          SendMessage          {"task": Task}
//	POST message:stream        SendStreamingMessage SSE of StreamResponse
//	GET  tasks/{id}            GetTask              Task
//	GET  tasks                 ListTasks            ListTasksResponse
//	POST tasks/{id}:cancel     CancelTask           Task
//	GET|POST tasks/{id}:subscribe  SubscribeToTask  SSE of StreamResponse
//	POST tasks/{id}/pushNotificationConfigs        CreateTaskPushNotificationConfig
//	GET  tasks/{id}/pushNotificationConfigs        ListTaskPushNotificationConfigs
//	GET  tasks/{id}/pushNotificationConfigs/{cid}  GetTaskPushNotificationConfig
//	DELETE tasks/{id}/pushNotificationConfigs/{cid}  DeleteTaskPushNotificationConfig
func (e *Edge) rest(w http.ResponseWriter, r *http.Request, req request) {
	if err := e.serveREST(w, r, req); err != nil {
		writeRESTError(w, r, err)
	}
}

func (e *Edge) serveREST(w http.ResponseWriter, r *http.Request, req request) error {
	if v := strings.TrimSpace(r.Header.Get("A2A-Version")); v != "" {
		if got, err := version(r); err != nil || got != wire.V10 {
			return &wire.Error{Code: wire.CodeVersion, Message: "A2A-Version: got " + strconv.Quote(v) + ", but the HTTP+JSON binding is A2A 1.0 only; send A2A-Version: 1.0 (or use JSON-RPC at the base URL for 0.3)"}
		}
	}
	path := strings.TrimPrefix(req.rest, "v1/")
	ctx := r.Context()
	allow := func(methods ...string) error {
		for _, m := range methods {
			if r.Method == m {
				return nil
			}
		}
		w.Header().Set("Allow", strings.Join(methods, ", "))
		return mailbox.Errorf(mailbox.CodeMethodNotAllowed, "%s %s: method not allowed; this path accepts %s", r.Method, r.URL.Path, strings.Join(methods, ", "))
	}
	switch {
	case path == "message:send" || path == "message:stream":
		if err := allow(http.MethodPost); err != nil {
			return err
		}
		body, rerr := readBody(w, r)
		if rerr != nil {
			return rerr
		}
		p, err := decodeSend(wire.V10, body, "")
		if err != nil {
			return err
		}
		if path == "message:stream" {
			p.blocking = false
		}
		tv, from, err := e.send(ctx, req.agent, p)
		if err != nil {
			return err
		}
		if path == "message:send" {
			writeAnswer(w, r, http.StatusOK, sendResult(wire.V10, tv))
			return nil
		}
		return e.stream(w, r, tv.ID, &from, true, restBinding)
	case path == "tasks":
		if err := allow(http.MethodGet); err != nil {
			return err
		}
		lr, err := listQuery(r.URL.Query())
		if err != nil {
			return err
		}
		p, arts, err := lr.decode("")
		if err != nil {
			return err
		}
		res, err := e.listAnswer(ctx, req.agent, p, arts)
		if err != nil {
			return err
		}
		writeAnswer(w, r, http.StatusOK, res)
		return nil
	case strings.HasPrefix(path, "tasks/"):
		rest := strings.TrimPrefix(path, "tasks/")
		if idPart, configs, ok := strings.Cut(rest, "/pushNotificationConfigs"); ok {
			id, err := url.PathUnescape(idPart)
			configID, cerr := url.PathUnescape(strings.TrimPrefix(configs, "/"))
			if err != nil || cerr != nil || id == "" || (configs != "" && (configs[0] != '/' || configID == "")) || strings.Contains(configs[min(1, len(configs)):], "/") {
				return mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route; push configs are at tasks/{id}/pushNotificationConfigs[/{configId}]", r.URL.Path)
			}
			return e.restPush(w, r, req.agent, id, configID, allow)
		}
		idPart, verb, _ := strings.Cut(rest, ":")
		id, err := url.PathUnescape(idPart)
		if err != nil || id == "" || strings.Contains(id, "/") {
			return mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route", r.URL.Path)
		}
		switch verb {
		case "":
			if err := allow(http.MethodGet); err != nil {
				return err
			}
			hl, err := intQuery(r.URL.Query(), "historyLength")
			if err != nil {
				return err
			}
			tv, err := e.get(ctx, req.agent, id, hl)
			if err != nil {
				return err
			}
			writeAnswer(w, r, http.StatusOK, wire.EncodeTask(wire.V10, tv, true))
			return nil
		case "cancel":
			if err := allow(http.MethodPost); err != nil {
				return err
			}
			tv, err := e.cancel(ctx, req.agent, id)
			if err != nil {
				return err
			}
			writeAnswer(w, r, http.StatusOK, wire.EncodeTask(wire.V10, tv, true))
			return nil
		case "subscribe":
			// The spec's text says POST, its proto GET: take both.
			if err := allow(http.MethodGet, http.MethodPost); err != nil {
				return err
			}
			resume, err := lastEventID(r)
			if err != nil {
				return err
			}
			rec, err := e.read(ctx, req.agent, id)
			if err != nil {
				return err
			}
			if st := wire.View(rec, nil).State; resume == nil && wire.Terminal(st) {
				return &wire.Error{Code: wire.CodeUnsupported, Message: "task " + id + " has finished (" + st + "); read it with GET tasks/" + id + " instead of subscribing"}
			}
			return e.stream(w, r, rec.Task.ID, resume, resume == nil, restBinding)
		}
		return mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route; tasks/{id} takes :cancel or :subscribe", r.URL.Path)
	case path == "extendedAgentCard":
		return extendedUnsupported(nil)
	}
	return mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route under the agent's base URL %s (JSON-RPC is POSTed to the base URL itself; HTTP+JSON routes are message:send, message:stream, tasks, tasks/{id}, tasks/{id}:cancel, tasks/{id}:subscribe)", r.URL.Path, req.baseURL)
}

// listQuery reads ListTasks' query parameters, refusing unknown ones.
func listQuery(q url.Values) (listRequest, error) {
	var lr listRequest
	for k := range q {
		switch k {
		case "contextId", "status", "pageSize", "pageToken", "historyLength", "includeArtifacts":
		default:
			return lr, wire.InvalidParams(k, "unknown query parameter; expected contextId, status, pageSize, pageToken, historyLength or includeArtifacts", nil)
		}
	}
	lr.ContextID, lr.Status, lr.PageToken = q.Get("contextId"), q.Get("status"), q.Get("pageToken")
	var err error
	if lr.PageSize, err = intQuery(q, "pageSize"); err != nil {
		return lr, err
	}
	if lr.HistoryLength, err = intQuery(q, "historyLength"); err != nil {
		return lr, err
	}
	if s := q.Get("includeArtifacts"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return lr, wire.InvalidParams("includeArtifacts", "expected true or false", s)
		}
		lr.IncludeArtifacts = &b
	}
	return lr, nil
}

func intQuery(q url.Values, name string) (*int, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, wire.InvalidParams(name, "expected an integer", s)
	}
	return &n, nil
}

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
	c := &restCall{w: w, r: r, req: req, path: strings.TrimPrefix(req.rest, "v1/")}
	route, err := c.route()
	if err != nil {
		return err
	}
	if rt := restRoutes[route]; rt.methods != nil {
		if err := c.allow(rt.methods...); err != nil {
			return err
		}
	}
	return restRoutes[route].serve(e, c)
}

// restCall is one request of the binding, with its route's path
// parameters.
type restCall struct {
	w            http.ResponseWriter
	r            *http.Request
	req          request
	path         string // under the agent's base URL, without v1/
	id, configID string
}

// restRoute is a route of the binding: the methods it takes (nil: its
// handler says, as a push config's route does by what it names) and its
// handler.
type restRoute struct {
	methods []string
	serve   func(e *Edge, c *restCall) error
}

var restRoutes = map[string]restRoute{
	"message:send":                       {[]string{http.MethodPost}, (*Edge).restSend},
	"message:stream":                     {[]string{http.MethodPost}, (*Edge).restSend},
	"tasks":                              {[]string{http.MethodGet}, (*Edge).restList},
	"tasks/{id}":                         {[]string{http.MethodGet}, (*Edge).restGet},
	"tasks/{id}:cancel":                  {[]string{http.MethodPost}, (*Edge).restCancel},
	"tasks/{id}:subscribe":               {[]string{http.MethodGet, http.MethodPost}, (*Edge).restSubscribe}, // the spec's text says POST, its proto GET: take both
	"tasks/{id}/pushNotificationConfigs": {nil, func(e *Edge, c *restCall) error { return e.restPush(c.w, c.r, c.req.agent, c.id, c.configID, c.allow) }},
	"extendedAgentCard":                  {nil, func(*Edge, *restCall) error { return extendedUnsupported(nil) }},
}

// route names the route of the call's path in restRoutes, and reads its
// task and config ids.
func (c *restCall) route() (string, error) {
	switch c.path {
	case "message:send", "message:stream", "tasks", "extendedAgentCard":
		return c.path, nil
	}
	rest, ok := strings.CutPrefix(c.path, "tasks/")
	if !ok {
		return "", mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route under the agent's base URL %s (JSON-RPC is POSTed to the base URL itself; HTTP+JSON routes are message:send, message:stream, tasks, tasks/{id}, tasks/{id}:cancel, tasks/{id}:subscribe)", c.r.URL.Path, c.req.baseURL)
	}
	if idPart, configs, ok := strings.Cut(rest, "/pushNotificationConfigs"); ok {
		id, err := url.PathUnescape(idPart)
		configID, cerr := url.PathUnescape(strings.TrimPrefix(configs, "/"))
		if err != nil || cerr != nil || id == "" || (configs != "" && (configs[0] != '/' || configID == "")) || strings.Contains(configs[min(1, len(configs)):], "/") {
			return "", mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route; push configs are at tasks/{id}/pushNotificationConfigs[/{configId}]", c.r.URL.Path)
		}
		c.id, c.configID = id, configID
		return "tasks/{id}/pushNotificationConfigs", nil
	}
	idPart, verb, _ := strings.Cut(rest, ":")
	id, err := url.PathUnescape(idPart)
	if err != nil || id == "" || strings.Contains(id, "/") {
		return "", mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route", c.r.URL.Path)
	}
	c.id = id
	switch verb {
	case "":
		return "tasks/{id}", nil
	case "cancel", "subscribe":
		return "tasks/{id}:" + verb, nil
	}
	return "", mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route; tasks/{id} takes :cancel or :subscribe", c.r.URL.Path)
}

// allow refuses a method the route does not take, saying which it does.
func (c *restCall) allow(methods ...string) error {
	for _, m := range methods {
		if c.r.Method == m {
			return nil
		}
	}
	c.w.Header().Set("Allow", strings.Join(methods, ", "))
	return mailbox.Errorf(mailbox.CodeMethodNotAllowed, "%s %s: method not allowed; this path accepts %s", c.r.Method, c.r.URL.Path, strings.Join(methods, ", "))
}

// restSend is message:send, and message:stream, which never blocks.
func (e *Edge) restSend(c *restCall) error {
	body, rerr := readBody(c.w, c.r)
	if rerr != nil {
		return rerr
	}
	p, err := decodeSend(wire.V10, body, "")
	if err != nil {
		return err
	}
	if c.path == "message:stream" {
		p.blocking = false
	}
	tv, from, err := e.send(c.r.Context(), c.req.agent, p)
	if err != nil {
		return err
	}
	if c.path == "message:send" {
		writeAnswer(c.w, c.r, http.StatusOK, sendResult(wire.V10, tv))
		return nil
	}
	return e.stream(c.w, c.r, tv.ID, &from, true, restBinding)
}

func (e *Edge) restList(c *restCall) error {
	lr, err := listQuery(c.r.URL.Query())
	if err != nil {
		return err
	}
	p, arts, err := lr.decode("")
	if err != nil {
		return err
	}
	res, err := e.listAnswer(c.r.Context(), c.req.agent, p, arts)
	if err != nil {
		return err
	}
	writeAnswer(c.w, c.r, http.StatusOK, res)
	return nil
}

func (e *Edge) restGet(c *restCall) error {
	hl, err := intQuery(c.r.URL.Query(), "historyLength")
	if err != nil {
		return err
	}
	tv, err := e.get(c.r.Context(), c.req.agent, c.id, hl)
	if err != nil {
		return err
	}
	writeAnswer(c.w, c.r, http.StatusOK, wire.EncodeTask(wire.V10, tv, true))
	return nil
}

func (e *Edge) restCancel(c *restCall) error {
	tv, err := e.cancel(c.r.Context(), c.req.agent, c.id)
	if err != nil {
		return err
	}
	writeAnswer(c.w, c.r, http.StatusOK, wire.EncodeTask(wire.V10, tv, true))
	return nil
}

func (e *Edge) restSubscribe(c *restCall) error {
	resume, err := lastEventID(c.r)
	if err != nil {
		return err
	}
	rec, err := e.read(c.r.Context(), c.req.agent, c.id)
	if err != nil {
		return err
	}
	if st := wire.View(rec, nil).State; resume == nil && wire.Terminal(st) {
		return &wire.Error{Code: wire.CodeUnsupported, Message: "task " + c.id + " has finished (" + st + "); read it with GET tasks/" + c.id + " instead of subscribing"}
	}
	return e.stream(c.w, c.r, rec.Task.ID, resume, resume == nil, restBinding)
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

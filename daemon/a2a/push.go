package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// Push notification configs, in every binding. v0.3 nests the config in
// a TaskPushNotificationConfig ({taskId, pushNotificationConfig: {id, url,
// token, authentication: {schemes, credentials}}}); v1.0 flattens it
// ({taskId, id, url, token, authentication: {scheme, credentials}}). Both
// decode into mailbox.PushConfig, and are answered in the caller's form.

// pushAuth03 and pushAuth10 are AuthenticationInfo of each generation.
type pushAuth03 struct {
	Schemes     []string `json:"schemes"`
	Credentials string   `json:"credentials"`
}

type pushAuth10 struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials"`
}

// pushConfig03 is PushNotificationConfig (v0.3).
type pushConfig03 struct {
	ID             string      `json:"id"`
	URL            *string     `json:"url"`
	Token          string      `json:"token"`
	Authentication *pushAuth03 `json:"authentication"`
}

// pushConfig10 is TaskPushNotificationConfig (v1.0), the config inside
// SendMessage's configuration too (without its taskId).
type pushConfig10 struct {
	Tenant         string      `json:"tenant"`
	ID             string      `json:"id"`
	TaskID         string      `json:"taskId"`
	URL            *string     `json:"url"`
	Token          string      `json:"token"`
	Authentication *pushAuth10 `json:"authentication"`
}

func (c pushConfig03) neutral() mailbox.PushConfig {
	out := mailbox.PushConfig{ID: c.ID, Token: c.Token}
	if c.URL != nil {
		out.URL = *c.URL
	}
	if a := c.Authentication; a != nil {
		out.Authentication = &mailbox.PushAuth{Schemes: a.Schemes, Credentials: a.Credentials}
	}
	return out
}

func (c pushConfig10) neutral() mailbox.PushConfig {
	out := mailbox.PushConfig{ID: c.ID, Token: c.Token}
	if c.URL != nil {
		out.URL = *c.URL
	}
	if a := c.Authentication; a != nil {
		out.Authentication = &mailbox.PushAuth{Schemes: []string{a.Scheme}, Credentials: a.Credentials}
		if a.Scheme == "" {
			out.Authentication.Schemes = nil
		}
	}
	return out
}

// decodePushConfig decodes the config of a send or a set in generation v;
// field names it in refusals.
func decodePushConfig(v string, raw json.RawMessage, field string) (mailbox.PushConfig, error) {
	var c mailbox.PushConfig
	if v == wire.V03 {
		var w pushConfig03
		if err := wire.StrictUnmarshal(raw, &w, field); err != nil {
			return c, err
		}
		c = w.neutral()
	} else {
		var w pushConfig10
		if err := wire.StrictUnmarshal(raw, &w, field); err != nil {
			return c, err
		}
		c = w.neutral()
	}
	// The mailbox's checks, worded with the caller's field names (the
	// task's id is not known yet: a config without an id is given one
	// later).
	probe := c
	if probe.ID == "" {
		probe.ID = "-"
	}
	if _, err := mailbox.NormalizePushConfig("push", "-", probe); err != nil {
		return c, pushFieldError(err, v, field)
	}
	return c, nil
}

// pushFieldError words a refusal of a config field (push.url, push.token,
// push.authentication.schemes[0], ...) with the caller's field names.
func pushFieldError(err error, v, field string) error {
	var me *mailbox.Error
	if !errors.As(err, &me) || me.Details == nil || !strings.HasPrefix(me.Details.Field, "push") {
		return err
	}
	name := func(f string) string {
		rest := strings.TrimPrefix(f, "push")
		if v == wire.V10 && strings.HasPrefix(rest, ".authentication.schemes") {
			rest = ".authentication.scheme"
		}
		return strings.TrimPrefix(field+rest, ".")
	}
	re := rpcErrorFrom(err, v)
	re.Field = name(me.Details.Field)
	re.Message = strings.Replace(me.Message, me.Details.Field, re.Field, 1)
	if v == wire.V10 {
		re.Message = strings.Replace(re.Message, "authentication.schemes[0]", "authentication.scheme", 1)
		re.Message = strings.Replace(re.Message, "authentication.schemes", "authentication.scheme", 1)
	}
	return re
}

// encodePushConfig is a config of task taskID as generation v answers it,
// its token and credentials redacted (mailbox.RedactedSecret), even to the
// task's owner: the A2A SDKs' clients read them as opaque strings, and the
// spec's own discussion (a2aproject/A2A#1681) has reads redact them.
func encodePushConfig(v, taskID string, c mailbox.PushConfig) obj {
	c = c.Redacted()
	if v == wire.V03 {
		pc := obj{"id": c.ID, "url": c.URL}
		if c.Token != "" {
			pc["token"] = c.Token
		}
		if a := c.Authentication; a != nil {
			auth := obj{"schemes": a.Schemes}
			if a.Credentials != "" {
				auth["credentials"] = a.Credentials
			}
			pc["authentication"] = auth
		}
		return obj{"taskId": taskID, "pushNotificationConfig": pc}
	}
	out := obj{"id": c.ID, "taskId": taskID, "url": c.URL}
	if c.Token != "" {
		out["token"] = c.Token
	}
	if a := c.Authentication; a != nil && len(a.Schemes) > 0 {
		auth := obj{"scheme": a.Schemes[0]}
		if a.Credentials != "" {
			auth["credentials"] = a.Credentials
		}
		out["authentication"] = auth
	}
	return out
}

// The operations. Each reads the task first as tasks/get does, so a task
// of another agent, or one not sent through the edge, is TaskNotFound.

func (e *Edge) setPush(ctx context.Context, agent, id string, c mailbox.PushConfig, v, field string) (mailbox.PushConfig, string, error) {
	rec, err := e.read(ctx, agent, id)
	if err != nil {
		return c, "", err
	}
	out, err := e.svc.SetPushConfig(ctx, rec.Task.ID, c)
	if err != nil {
		return c, "", pushFieldError(err, v, field)
	}
	return out, rec.Task.ID, nil
}

func (e *Edge) pushConfigs(ctx context.Context, agent, id, configID string) ([]mailbox.PushConfig, string, error) {
	rec, err := e.read(ctx, agent, id)
	if err != nil {
		return nil, "", err
	}
	cs, err := e.svc.PushConfigs(ctx, rec.Task.ID, configID)
	if err != nil {
		return nil, "", pushNotFound(err, id, configID)
	}
	return cs, rec.Task.ID, nil
}

// deletePush deletes a config of a task the caller may read. A config the
// task does not have (deleted already, or never set) is deleted as far as
// the caller can tell: A2A 1.0 has that delete succeed, so a retried
// delete does. The mailbox refuses it before deciding anything, so it
// writes nothing to the log. A task the caller may not read, or that is
// not there, stays TaskNotFound.
func (e *Edge) deletePush(ctx context.Context, agent, id, configID string) error {
	rec, err := e.read(ctx, agent, id)
	if err != nil {
		return err
	}
	err = e.svc.DeletePushConfig(ctx, rec.Task.ID, configID)
	if mailbox.ErrorCode(err) == mailbox.CodeNotFound && isField(err, "push.id") {
		return nil
	}
	return err
}

// pushNotFound words a config the task does not have.
func pushNotFound(err error, taskID, configID string) error {
	if mailbox.ErrorCode(err) == mailbox.CodeNotFound && isField(err, "push.id") {
		return &wire.Error{Code: wire.CodeInvalidParams, Field: "params.pushNotificationConfigId",
			Message: "task " + taskID + " has no push notification config " + quoteID(configID) + "; list its configs to see their ids"}
	}
	return err
}

func quoteID(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// JSON-RPC v0.3.

// pushSetParams03 is TaskPushNotificationConfig (v0.3).
type pushSetParams03 struct {
	TaskID                 *string         `json:"taskId"`
	PushNotificationConfig json.RawMessage `json:"pushNotificationConfig"`
}

// pushIDParams03 is TaskIdParams or Get/DeleteTaskPushNotificationConfigParams.
type pushIDParams03 struct {
	ID                       *string         `json:"id"`
	PushNotificationConfigID *string         `json:"pushNotificationConfigId"`
	Metadata                 json.RawMessage `json:"metadata"`
}

func (c *call) pushSet03() error {
	var p pushSetParams03
	if err := wire.StrictUnmarshal(c.params, &p, "params"); err != nil {
		return err
	}
	if p.TaskID == nil || *p.TaskID == "" {
		return wire.InvalidParams("params.taskId", "expected the id of the task to notify of", p.TaskID)
	}
	if len(p.PushNotificationConfig) == 0 || string(p.PushNotificationConfig) == "null" {
		return wire.InvalidParams("params.pushNotificationConfig", "expected the config, such as {\"url\": \"https://hooks.example.com/a2a\", \"token\": \"...\"}", (*string)(nil))
	}
	cfg, err := decodePushConfig(wire.V03, p.PushNotificationConfig, "params.pushNotificationConfig")
	if err != nil {
		return err
	}
	out, id, err := c.edge.setPush(c.ctx(), c.req.agent, *p.TaskID, cfg, wire.V03, "params.pushNotificationConfig")
	if err != nil {
		return err
	}
	return c.answer(encodePushConfig(wire.V03, id, out))
}

func (c *call) pushIDs03(needConfig bool) (string, string, error) {
	var p pushIDParams03
	if err := wire.StrictUnmarshal(c.params, &p, "params"); err != nil {
		return "", "", err
	}
	if p.ID == nil || *p.ID == "" {
		return "", "", wire.InvalidParams("params.id", "expected the task's id", p.ID)
	}
	configID := ""
	if p.PushNotificationConfigID != nil {
		configID = *p.PushNotificationConfigID
	}
	if needConfig && configID == "" {
		return "", "", wire.InvalidParams("params.pushNotificationConfigId", "expected the id of the config to delete", p.PushNotificationConfigID)
	}
	return *p.ID, configID, nil
}

func (c *call) pushGet03() error {
	id, configID, err := c.pushIDs03(false)
	if err != nil {
		return err
	}
	cs, tid, err := c.edge.pushConfigs(c.ctx(), c.req.agent, id, configID)
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		return &wire.Error{Code: wire.CodeInvalidParams, Field: "params.id", Message: "task " + id + " has no push notification config; set one with tasks/pushNotificationConfig/set"}
	}
	if configID == "" && len(cs) > 1 {
		// TaskIdParams names no config: the one whose id is the task's
		// (a config set without an id), else the first.
		for _, x := range cs {
			if x.ID == tid {
				return c.answer(encodePushConfig(wire.V03, tid, x))
			}
		}
	}
	return c.answer(encodePushConfig(wire.V03, tid, cs[0]))
}

func (c *call) pushList03() error {
	id, _, err := c.pushIDs03(false)
	if err != nil {
		return err
	}
	cs, tid, err := c.edge.pushConfigs(c.ctx(), c.req.agent, id, "")
	if err != nil {
		return err
	}
	out := make([]obj, len(cs))
	for i, x := range cs {
		out[i] = encodePushConfig(wire.V03, tid, x)
	}
	return c.answer(out)
}

func (c *call) pushDelete03() error {
	id, configID, err := c.pushIDs03(true)
	if err != nil {
		return err
	}
	if err := c.edge.deletePush(c.ctx(), c.req.agent, id, configID); err != nil {
		return err
	}
	return c.answer(nil)
}

// JSON-RPC v1.0.

// pushIDParams10 is Get/Delete/ListTaskPushNotificationConfig(s)Request.
type pushIDParams10 struct {
	Tenant    string  `json:"tenant"`
	TaskID    *string `json:"taskId"`
	ID        *string `json:"id"`
	PageSize  *int    `json:"pageSize"`
	PageToken string  `json:"pageToken"`
}

func (c *call) pushCreate10() error {
	var p pushConfig10
	if err := wire.StrictUnmarshal(c.params, &p, "params"); err != nil {
		return err
	}
	if p.TaskID == "" {
		return wire.InvalidParams("params.taskId", "expected the id of the task to notify of", (*string)(nil))
	}
	cfg, err := decodePushConfig(wire.V10, c.params, "params")
	if err != nil {
		return err
	}
	out, id, err := c.edge.setPush(c.ctx(), c.req.agent, p.TaskID, cfg, wire.V10, "params")
	if err != nil {
		return err
	}
	return c.answer(encodePushConfig(wire.V10, id, out))
}

func (c *call) pushIDs10(needConfig bool) (pushIDParams10, error) {
	var p pushIDParams10
	if err := wire.StrictUnmarshal(c.params, &p, "params"); err != nil {
		return p, err
	}
	if p.TaskID == nil || *p.TaskID == "" {
		return p, wire.InvalidParams("params.taskId", "expected the task's id", p.TaskID)
	}
	if needConfig && (p.ID == nil || *p.ID == "") {
		return p, wire.InvalidParams("params.id", "expected the config's id", p.ID)
	}
	return p, nil
}

func (c *call) pushGet10() error {
	p, err := c.pushIDs10(true)
	if err != nil {
		return err
	}
	cs, tid, err := c.edge.pushConfigs(c.ctx(), c.req.agent, *p.TaskID, *p.ID)
	if err != nil {
		return err
	}
	return c.answer(encodePushConfig(wire.V10, tid, cs[0]))
}

func (c *call) pushList10() error {
	p, err := c.pushIDs10(false)
	if err != nil {
		return err
	}
	cs, tid, err := c.edge.pushConfigs(c.ctx(), c.req.agent, *p.TaskID, "")
	if err != nil {
		return err
	}
	return c.answer(pushList10(tid, cs))
}

// pushList10 is ListTaskPushNotificationConfigsResponse: every config of
// the task at once (a task has at most mailbox.MaxPushConfigs).
func pushList10(taskID string, cs []mailbox.PushConfig) obj {
	out := make([]obj, len(cs))
	for i, x := range cs {
		out[i] = encodePushConfig(wire.V10, taskID, x)
	}
	return obj{"configs": out}
}

func (c *call) pushDelete10() error {
	p, err := c.pushIDs10(true)
	if err != nil {
		return err
	}
	if err := c.edge.deletePush(c.ctx(), c.req.agent, *p.TaskID, *p.ID); err != nil {
		return err
	}
	return c.answer(obj{})
}

// REST (v1.0): tasks/{id}/pushNotificationConfigs[/{configId}].
func (e *Edge) restPush(w http.ResponseWriter, r *http.Request, agent, id, configID string, allow func(...string) error) error {
	ctx := r.Context()
	if configID == "" {
		if err := allow(http.MethodGet, http.MethodPost); err != nil {
			return err
		}
		if r.Method == http.MethodGet {
			cs, tid, err := e.pushConfigs(ctx, agent, id, "")
			if err != nil {
				return err
			}
			writeAnswer(w, r, http.StatusOK, pushList10(tid, cs))
			return nil
		}
		body, rerr := readBody(w, r)
		if rerr != nil {
			return rerr
		}
		cfg, err := decodePushConfig(wire.V10, body, "")
		if err != nil {
			return err
		}
		out, tid, err := e.setPush(ctx, agent, id, cfg, wire.V10, "")
		if err != nil {
			return err
		}
		writeAnswer(w, r, http.StatusOK, encodePushConfig(wire.V10, tid, out))
		return nil
	}
	if err := allow(http.MethodGet, http.MethodDelete); err != nil {
		return err
	}
	if r.Method == http.MethodDelete {
		if err := e.deletePush(ctx, agent, id, configID); err != nil {
			return err
		}
		writeAnswer(w, r, http.StatusOK, obj{})
		return nil
	}
	cs, tid, err := e.pushConfigs(ctx, agent, id, configID)
	if err != nil {
		return err
	}
	writeAnswer(w, r, http.StatusOK, encodePushConfig(wire.V10, tid, cs[0]))
	return nil
}

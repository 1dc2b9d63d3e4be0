package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The two generations' JSON: decoding messages into the neutral model and
// encoding every answer from it. v0.3 carries a "kind" on every object and
// spells states in lowercase; v1.0 is the proto's JSON mapping (parts are
// a oneof of text, raw, url and data; states are TASK_STATE_*).

// decodeMessage decodes an A2A message of version v. field names it in
// errors ("params.message").
func decodeMessage(v string, raw json.RawMessage, field string) (message, error) {
	var w struct {
		Kind             *string           `json:"kind"`
		Role             string            `json:"role"`
		Parts            []json.RawMessage `json:"parts"`
		MessageID        string            `json:"messageId"`
		ContextID        string            `json:"contextId"`
		TaskID           string            `json:"taskId"`
		Metadata         json.RawMessage   `json:"metadata"`
		Extensions       []string          `json:"extensions"`
		ReferenceTaskIDs []string          `json:"referenceTaskIds"`
	}
	if err := strictUnmarshal(raw, &w, field); err != nil {
		return message{}, err
	}
	m := message{messageID: w.MessageID, contextID: w.ContextID, taskID: w.TaskID, extensions: w.Extensions, referenceTaskIDs: w.ReferenceTaskIDs}
	// A v0.3 message may leave out its kind (or send it null): the SDK
	// servers accept that, and clients built on their own models (Marie
	// AI's) send it so. A kind that is there must be "message".
	if v == v03 && w.Kind != nil && *w.Kind != "message" {
		return m, invalidParams(field+".kind", "expected \"message\" (or no kind)", w.Kind)
	}
	switch {
	case v == v03 && (w.Role == "user" || w.Role == "agent"):
		m.role = w.Role
	case v == v10 && (w.Role == "ROLE_USER" || w.Role == "ROLE_AGENT"):
		m.role = map[string]string{"ROLE_USER": "user", "ROLE_AGENT": "agent"}[w.Role]
	default:
		want := `"user" or "agent"`
		if v == v10 {
			want = `"ROLE_USER" or "ROLE_AGENT"`
		}
		return m, invalidParams(field+".role", "expected "+want, w.Role)
	}
	if w.MessageID == "" {
		return m, invalidParams(field+".messageId", "expected a non-empty message id (a retry with the same id is answered with the same task)", w.MessageID)
	}
	if len(w.Parts) == 0 {
		return m, invalidParams(field+".parts", "expected at least one part", nil)
	}
	if isObject(w.Metadata) {
		m.metadata = w.Metadata
	} else if len(w.Metadata) > 0 && string(w.Metadata) != "null" {
		return m, invalidParams(field+".metadata", "expected an object", json.RawMessage(w.Metadata))
	}
	for i, praw := range w.Parts {
		p, err := decodePart(v, praw, field+".parts["+strconv.Itoa(i)+"]")
		if err != nil {
			return m, err
		}
		m.parts = append(m.parts, p)
	}
	return m, nil
}

func decodePart(v string, raw json.RawMessage, field string) (part, error) {
	var w struct {
		Kind     *string          `json:"kind"`
		Text     *string          `json:"text"`
		Data     json.RawMessage  `json:"data"`
		File     *json.RawMessage `json:"file"`
		Raw      *string          `json:"raw"`
		URL      *string          `json:"url"`
		Metadata json.RawMessage  `json:"metadata"`
		Filename string           `json:"filename"`
		Media    string           `json:"mediaType"`
	}
	if err := strictUnmarshal(raw, &w, field); err != nil {
		return part{}, err
	}
	p := part{filename: w.Filename, mediaType: w.Media}
	if isObject(w.Metadata) {
		p.metadata = w.Metadata
	}
	if v == v03 {
		if w.Kind == nil {
			return p, invalidParams(field+".kind", `expected "text", "data" or "file" (every v0.3 part names its kind)`, w.Kind)
		}
		switch *w.Kind {
		case "text":
			if w.Text == nil {
				return p, invalidParams(field+".text", "expected a string for a text part", nil)
			}
			p.kind, p.text = "text", *w.Text
		case "data":
			if !isObject(w.Data) {
				return p, invalidParams(field+".data", "expected an object for a data part", json.RawMessage(w.Data))
			}
			p.kind, p.data = "data", w.Data
		case "file":
			var f struct {
				Name     string  `json:"name"`
				MimeType string  `json:"mimeType"`
				Bytes    *string `json:"bytes"`
				URI      *string `json:"uri"`
			}
			if w.File == nil || strictUnmarshal(*w.File, &f, field+".file") != nil || (f.Bytes == nil) == (f.URI == nil) {
				return p, invalidParams(field+".file", "expected an object with exactly one of bytes (base64) and uri", nil)
			}
			p.kind, p.filename, p.mediaType = "file", f.Name, f.MimeType
			if f.Bytes != nil {
				p.fileBytes = *f.Bytes
			} else {
				p.fileURI = *f.URI
			}
		default:
			return p, invalidParams(field+".kind", `expected "text", "data" or "file"`, *w.Kind)
		}
		return p, nil
	}
	n := 0
	if w.Text != nil {
		n++
		p.kind, p.text = "text", *w.Text
	}
	if len(w.Data) > 0 {
		n++
		p.kind, p.data = "data", w.Data
	}
	if w.Raw != nil {
		n++
		p.kind, p.fileBytes = "file", *w.Raw
	}
	if w.URL != nil {
		n++
		p.kind, p.fileURI = "file", *w.URL
	}
	if n != 1 {
		return p, invalidParams(field, "expected exactly one of text, data, raw and url", nil)
	}
	return p, nil
}

// strictUnmarshal decodes an object, refusing duplicate keys and values
// nested too deep (what the native routes refuse), but not unknown
// fields: later minor versions of the protocol add them.
func strictUnmarshal(raw json.RawMessage, v any, field string) error {
	if !isObject(raw) {
		return invalidParams(field, "expected an object", raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
			return invalidParams(field+"."+te.Field, "expected "+jsonKind(te.Type.Kind().String()), nil)
		}
		return invalidParams(field, err.Error(), nil)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "bool":
		return "true or false"
	case "int", "int32", "int64":
		return "an integer"
	}
	return "an object"
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// Encoding.

var states10 = map[string]string{
	stateSubmitted: "TASK_STATE_SUBMITTED",
	stateWorking:   "TASK_STATE_WORKING",
	stateCompleted: "TASK_STATE_COMPLETED",
	stateFailed:    "TASK_STATE_FAILED",
	stateCanceled:  "TASK_STATE_CANCELED",
	stateRejected:  "TASK_STATE_REJECTED",

	stateInputRequired: "TASK_STATE_INPUT_REQUIRED",
	stateAuthRequired:  "TASK_STATE_AUTH_REQUIRED",
}

// state10 reads a v1.0 state filter; "" when unknown.
func state10(s string) string {
	for k, v := range states10 {
		if v == s {
			return k
		}
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

type obj = map[string]any

func encodePart(v string, p part) obj {
	o := obj{}
	switch v {
	case v03:
		switch p.kind {
		case "text":
			o["kind"], o["text"] = "text", p.text
		case "data":
			data := p.data
			if !isObject(data) {
				data = json.RawMessage(`{"value":` + string(data) + `}`)
			}
			o["kind"], o["data"] = "data", data
		case "file":
			f := obj{}
			if p.filename != "" {
				f["name"] = p.filename
			}
			if p.mediaType != "" {
				f["mimeType"] = p.mediaType
			}
			if p.fileURI != "" {
				f["uri"] = p.fileURI
			} else {
				f["bytes"] = p.fileBytes
			}
			o["kind"], o["file"] = "file", f
		}
	default:
		switch p.kind {
		case "text":
			o["text"] = p.text
		case "data":
			o["data"] = p.data
		case "file":
			if p.fileURI != "" {
				o["url"] = p.fileURI
			} else {
				o["raw"] = p.fileBytes
			}
			if p.filename != "" {
				o["filename"] = p.filename
			}
		}
		if p.mediaType != "" {
			o["mediaType"] = p.mediaType
		}
	}
	if p.metadata != nil {
		o["metadata"] = p.metadata
	}
	return o
}

func encodeParts(v string, ps []part) []obj {
	out := make([]obj, len(ps))
	for i, p := range ps {
		out[i] = encodePart(v, p)
	}
	return out
}

func encodeMessage(v string, m message) obj {
	o := obj{"role": m.role, "parts": encodeParts(v, m.parts), "messageId": m.messageID}
	if v == v03 {
		o["kind"] = "message"
	} else {
		o["role"] = map[string]string{"user": "ROLE_USER", "agent": "ROLE_AGENT"}[m.role]
	}
	if m.contextID != "" {
		o["contextId"] = m.contextID
	}
	if m.taskID != "" {
		o["taskId"] = m.taskID
	}
	if m.metadata != nil {
		o["metadata"] = m.metadata
	}
	if len(m.extensions) > 0 {
		o["extensions"] = m.extensions
	}
	if len(m.referenceTaskIDs) > 0 {
		o["referenceTaskIds"] = m.referenceTaskIDs
	}
	return o
}

func encodeStatus(v string, tv taskView) obj {
	st := tv.state
	if v == v10 {
		st = states10[st]
	}
	o := obj{"state": st, "timestamp": stamp(tv.timestamp)}
	if tv.statusMessage != nil {
		o["message"] = encodeMessage(v, *tv.statusMessage)
	}
	return o
}

func encodeArtifact(v string, a artifact) obj {
	return obj{"artifactId": a.id, "name": a.name, "parts": encodeParts(v, a.parts)}
}

// encodeTask writes a task; withArtifacts false leaves them out (a v1.0
// listing without includeArtifacts).
func encodeTask(v string, tv taskView, withArtifacts bool) obj {
	o := obj{"id": tv.id, "contextId": tv.contextID, "status": encodeStatus(v, tv)}
	if v == v03 {
		o["kind"] = "task"
	}
	if withArtifacts && len(tv.artifacts) > 0 {
		as := make([]obj, len(tv.artifacts))
		for i, a := range tv.artifacts {
			as[i] = encodeArtifact(v, a)
		}
		o["artifacts"] = as
	}
	if len(tv.history) > 0 {
		hs := make([]obj, len(tv.history))
		for i, m := range tv.history {
			hs[i] = encodeMessage(v, m)
		}
		o["history"] = hs
	}
	if tv.metadata != nil {
		o["metadata"] = tv.metadata
	}
	return o
}

// encodeEvent writes one stream event: v0.3 the object itself (with its
// kind), v1.0 a StreamResponse wrapping it.
func encodeEvent(v string, ev streamEvent) obj {
	var o obj
	var key string
	switch ev.kind {
	case "task":
		o, key = encodeTask(v, ev.task, true), "task"
	case "artifact":
		o = obj{"taskId": ev.task.id, "contextId": ev.task.contextID, "artifact": encodeArtifact(v, ev.task.artifacts[0]), "append": false, "lastChunk": true}
		key = "artifactUpdate"
		if v == v03 {
			o["kind"] = "artifact-update"
		}
	default:
		o = obj{"taskId": ev.task.id, "contextId": ev.task.contextID, "status": encodeStatus(v, ev.task)}
		key = "statusUpdate"
		if v == v03 {
			// v1.0 dropped final: the stream's end says it.
			o["kind"], o["final"] = "status-update", ev.final
		}
	}
	if v == v03 {
		return o
	}
	return obj{key: o}
}

func invalidParams(field, want string, got any) *rpcError {
	msg := field + ": " + want
	switch g := got.(type) {
	case nil:
	case *string:
		if g == nil {
			msg = field + ": missing, " + want
		} else {
			msg = fmt.Sprintf("%s: got %q, %s", field, *g, want)
		}
	case string:
		msg = fmt.Sprintf("%s: got %q, %s", field, g, want)
	case json.RawMessage:
		if len(g) > 0 {
			s := string(g)
			if len(s) > 40 {
				s = s[:40] + "..."
			}
			msg = fmt.Sprintf("%s: got %s, %s", field, s, want)
		} else {
			msg = field + ": missing, " + want
		}
	}
	return &rpcError{code: codeInvalidParams, msg: msg, field: field}
}

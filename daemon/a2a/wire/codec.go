package wire

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

// DecodeMessage decodes an A2A message of version v. field names it in
// errors ("params.message").
func DecodeMessage(v string, raw json.RawMessage, field string) (Message, error) {
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
	if err := StrictUnmarshal(raw, &w, field); err != nil {
		return Message{}, err
	}
	m := Message{MessageID: w.MessageID, ContextID: w.ContextID, TaskID: w.TaskID, Extensions: w.Extensions, ReferenceTaskIDs: w.ReferenceTaskIDs}
	// A v0.3 message may leave out its kind (or send it null): the SDK
	// servers accept that, and clients built on their own models (Marie
	// AI's) send it so. A kind that is there must be "message".
	if v == V03 && w.Kind != nil && *w.Kind != "message" {
		return m, InvalidParams(field+".kind", "expected \"message\" (or no kind)", w.Kind)
	}
	switch {
	case v == V03 && (w.Role == "user" || w.Role == "agent"):
		m.Role = w.Role
	case v == V10 && (w.Role == "ROLE_USER" || w.Role == "ROLE_AGENT"):
		m.Role = map[string]string{"ROLE_USER": "user", "ROLE_AGENT": "agent"}[w.Role]
	default:
		want := `"user" or "agent"`
		if v == V10 {
			want = `"ROLE_USER" or "ROLE_AGENT"`
		}
		return m, InvalidParams(field+".role", "expected "+want, w.Role)
	}
	if w.MessageID == "" {
		return m, InvalidParams(field+".messageId", "expected a non-empty message id (a retry with the same id is answered with the same task)", w.MessageID)
	}
	if len(w.Parts) == 0 {
		return m, InvalidParams(field+".parts", "expected at least one part", nil)
	}
	if IsObject(w.Metadata) {
		m.Metadata = w.Metadata
	} else if len(w.Metadata) > 0 && string(w.Metadata) != "null" {
		return m, InvalidParams(field+".metadata", "expected an object", json.RawMessage(w.Metadata))
	}
	for i, praw := range w.Parts {
		p, err := DecodePart(v, praw, field+".parts["+strconv.Itoa(i)+"]")
		if err != nil {
			return m, err
		}
		m.Parts = append(m.Parts, p)
	}
	return m, nil
}

func DecodePart(v string, raw json.RawMessage, field string) (Part, error) {
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
	if err := StrictUnmarshal(raw, &w, field); err != nil {
		return Part{}, err
	}
	p := Part{Filename: w.Filename, MediaType: w.Media}
	if IsObject(w.Metadata) {
		p.Metadata = w.Metadata
	}
	if v == V03 {
		if w.Kind == nil {
			return p, InvalidParams(field+".kind", `expected "text", "data" or "file" (every v0.3 part names its kind)`, w.Kind)
		}
		switch *w.Kind {
		case "text":
			if w.Text == nil {
				return p, InvalidParams(field+".text", "expected a string for a text part", nil)
			}
			p.Kind, p.Text = "text", *w.Text
		case "data":
			if !IsObject(w.Data) {
				return p, InvalidParams(field+".data", "expected an object for a data part", json.RawMessage(w.Data))
			}
			p.Kind, p.Data = "data", w.Data
		case "file":
			var f struct {
				Name     string  `json:"name"`
				MimeType string  `json:"mimeType"`
				Bytes    *string `json:"bytes"`
				URI      *string `json:"uri"`
			}
			if w.File == nil || StrictUnmarshal(*w.File, &f, field+".file") != nil || (f.Bytes == nil) == (f.URI == nil) {
				return p, InvalidParams(field+".file", "expected an object with exactly one of bytes (base64) and uri", nil)
			}
			p.Kind, p.Filename, p.MediaType = "file", f.Name, f.MimeType
			if f.Bytes != nil {
				p.FileBytes = *f.Bytes
			} else {
				p.FileURI = *f.URI
			}
		default:
			return p, InvalidParams(field+".kind", `expected "text", "data" or "file"`, *w.Kind)
		}
		return p, nil
	}
	n := 0
	if w.Text != nil {
		n++
		p.Kind, p.Text = "text", *w.Text
	}
	if len(w.Data) > 0 {
		n++
		p.Kind, p.Data = "data", w.Data
	}
	if w.Raw != nil {
		n++
		p.Kind, p.FileBytes = "file", *w.Raw
	}
	if w.URL != nil {
		n++
		p.Kind, p.FileURI = "file", *w.URL
	}
	if n != 1 {
		return p, InvalidParams(field, "expected exactly one of text, data, raw and url", nil)
	}
	return p, nil
}

// StrictUnmarshal decodes an object, refusing duplicate keys and values
// nested too deep (what the native routes refuse), but not unknown
// fields: later minor versions of the protocol add them.
func StrictUnmarshal(raw json.RawMessage, v any, field string) error {
	if !IsObject(raw) {
		return InvalidParams(field, "expected an object", raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
			return InvalidParams(field+"."+te.Field, "expected "+jsonKind(te.Type.Kind().String()), nil)
		}
		return InvalidParams(field, err.Error(), nil)
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

func IsObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// Encoding.

var states10 = map[string]string{
	StateSubmitted: "TASK_STATE_SUBMITTED",
	StateWorking:   "TASK_STATE_WORKING",
	StateCompleted: "TASK_STATE_COMPLETED",
	StateFailed:    "TASK_STATE_FAILED",
	StateCanceled:  "TASK_STATE_CANCELED",
	StateRejected:  "TASK_STATE_REJECTED",

	StateInputRequired: "TASK_STATE_INPUT_REQUIRED",
	StateAuthRequired:  "TASK_STATE_AUTH_REQUIRED",
}

// State10 reads a v1.0 state filter; "" when unknown.
func State10(s string) string {
	for k, v := range states10 {
		if v == s {
			return k
		}
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

type obj = map[string]any

func encodePart(v string, p Part) obj {
	o := obj{}
	switch v {
	case V03:
		switch p.Kind {
		case "text":
			o["kind"], o["text"] = "text", p.Text
		case "data":
			data := p.Data
			if !IsObject(data) {
				data = json.RawMessage(`{"value":` + string(data) + `}`)
			}
			o["kind"], o["data"] = "data", data
		case "file":
			f := obj{}
			if p.Filename != "" {
				f["name"] = p.Filename
			}
			if p.MediaType != "" {
				f["mimeType"] = p.MediaType
			}
			if p.FileURI != "" {
				f["uri"] = p.FileURI
			} else {
				f["bytes"] = p.FileBytes
			}
			o["kind"], o["file"] = "file", f
		}
	default:
		switch p.Kind {
		case "text":
			o["text"] = p.Text
		case "data":
			o["data"] = p.Data
		case "file":
			if p.FileURI != "" {
				o["url"] = p.FileURI
			} else {
				o["raw"] = p.FileBytes
			}
			if p.Filename != "" {
				o["filename"] = p.Filename
			}
		}
		if p.MediaType != "" {
			o["mediaType"] = p.MediaType
		}
	}
	if p.Metadata != nil {
		o["metadata"] = p.Metadata
	}
	return o
}

func encodeParts(v string, ps []Part) []obj {
	out := make([]obj, len(ps))
	for i, p := range ps {
		out[i] = encodePart(v, p)
	}
	return out
}

func EncodeMessage(v string, m Message) obj {
	o := obj{"role": m.Role, "parts": encodeParts(v, m.Parts), "messageId": m.MessageID}
	if v == V03 {
		o["kind"] = "message"
	} else {
		o["role"] = map[string]string{"user": "ROLE_USER", "agent": "ROLE_AGENT"}[m.Role]
	}
	if m.ContextID != "" {
		o["contextId"] = m.ContextID
	}
	if m.TaskID != "" {
		o["taskId"] = m.TaskID
	}
	if m.Metadata != nil {
		o["metadata"] = m.Metadata
	}
	if len(m.Extensions) > 0 {
		o["extensions"] = m.Extensions
	}
	if len(m.ReferenceTaskIDs) > 0 {
		o["referenceTaskIds"] = m.ReferenceTaskIDs
	}
	return o
}

func encodeStatus(v string, tv TaskView) obj {
	st := tv.State
	if v == V10 {
		st = states10[st]
	}
	o := obj{"state": st, "timestamp": stamp(tv.Timestamp)}
	if tv.StatusMessage != nil {
		o["message"] = EncodeMessage(v, *tv.StatusMessage)
	}
	return o
}

func encodeArtifact(v string, a Artifact) obj {
	return obj{"artifactId": a.ID, "name": a.Name, "parts": encodeParts(v, a.Parts)}
}

// EncodeTask writes a task; withArtifacts false leaves them out (a v1.0
// listing without includeArtifacts).
func EncodeTask(v string, tv TaskView, withArtifacts bool) obj {
	o := obj{"id": tv.ID, "contextId": tv.ContextID, "status": encodeStatus(v, tv)}
	if v == V03 {
		o["kind"] = "task"
	}
	if withArtifacts && len(tv.Artifacts) > 0 {
		as := make([]obj, len(tv.Artifacts))
		for i, a := range tv.Artifacts {
			as[i] = encodeArtifact(v, a)
		}
		o["artifacts"] = as
	}
	if len(tv.History) > 0 {
		hs := make([]obj, len(tv.History))
		for i, m := range tv.History {
			hs[i] = EncodeMessage(v, m)
		}
		o["history"] = hs
	}
	if tv.Metadata != nil {
		o["metadata"] = tv.Metadata
	}
	return o
}

// EncodeEvent writes one stream event: v0.3 the object itself (with its
// kind), v1.0 a StreamResponse wrapping it.
func EncodeEvent(v string, ev StreamEvent) obj {
	var o obj
	var key string
	switch ev.Kind {
	case "task":
		o, key = EncodeTask(v, ev.Task, true), "task"
	case "artifact":
		o = obj{"taskId": ev.Task.ID, "contextId": ev.Task.ContextID, "artifact": encodeArtifact(v, ev.Task.Artifacts[0]), "append": false, "lastChunk": true}
		key = "artifactUpdate"
		if v == V03 {
			o["kind"] = "artifact-update"
		}
	default:
		o = obj{"taskId": ev.Task.ID, "contextId": ev.Task.ContextID, "status": encodeStatus(v, ev.Task)}
		key = "statusUpdate"
		if v == V03 {
			// v1.0 dropped final: the stream's end says it.
			o["kind"], o["final"] = "status-update", ev.Final
		}
	}
	if v == V03 {
		return o
	}
	return obj{key: o}
}

func InvalidParams(field, want string, got any) *Error {
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
	return &Error{Code: CodeInvalidParams, Message: msg, Field: field}
}

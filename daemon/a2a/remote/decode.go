package remote

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// Reading what a remote answers, in each generation, into Task.
// The edge's decoders are strict, as a server must be with its callers;
// a client reads remotes more leniently (a status message without an id or
// a role, a task without a context id), but never guesses at a task's id
// or state.

// wireError is an answer that does not parse: what was wrong and where.
type wireError struct{ msg string }

func (e *wireError) Error() string { return e.msg }

func malformed(field, want string) error { return &wireError{field + ": " + want} }

// asWire turns a decoder's refusal (an *rpcError naming the field) into
// a wireError.
func asWire(err error) error {
	var re *wire.Error
	if errors.As(err, &re) {
		return &wireError{re.Message}
	}
	return err
}

// decodeRemoteMessage reads a message from a remote, defaulting what a
// lenient server leaves out (the id, the role); a message without parts
// is nil.
func decodeRemoteMessage(v string, raw json.RawMessage, field string) (*wire.Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil, malformed(field, "expected a message object")
	}
	var parts []json.RawMessage
	if p, ok := fields["parts"]; ok && json.Unmarshal(p, &parts) == nil && len(parts) == 0 {
		return nil, nil
	}
	if id, ok := fields["messageId"]; !ok || string(id) == `""` || string(id) == "null" {
		fields["messageId"] = json.RawMessage(`"remote"`)
	}
	if r, ok := fields["role"]; !ok || string(r) == "null" || string(r) == `""` {
		fields["role"] = json.RawMessage(map[string]string{wire.V03: `"agent"`, wire.V10: `"ROLE_AGENT"`}[v])
	}
	patched, _ := json.Marshal(fields)
	m, err := wire.DecodeMessage(v, patched, field)
	if err != nil {
		return nil, asWire(err)
	}
	if m.MessageID == "remote" {
		m.MessageID = ""
	}
	return &m, nil
}

// taskWire is a task in either generation (the legacy one too: its
// status.message is a string, its parts are typed).
type taskWire struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	SessionID string `json:"sessionId"` // legacy
	Status    struct {
		State   string          `json:"state"`
		Message json.RawMessage `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string            `json:"artifactId"`
		Name       string            `json:"name"`
		Parts      []json.RawMessage `json:"parts"`
	} `json:"artifacts"`
}

// decodeRemoteTask reads a task of generation v (v03, v10 or
// versionLegacy).
func decodeRemoteTask(v string, raw json.RawMessage, field string) (Task, error) {
	var w taskWire
	if !wire.IsObject(raw) {
		return Task{}, malformed(field, "expected a task object")
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Task{}, malformed(field, "expected a task object: "+err.Error())
	}
	if w.ID == "" {
		return Task{}, malformed(field+".id", "missing, expected the task's id")
	}
	t := Task{ID: w.ID, ContextID: w.ContextID}
	if v == wire.VersionLegacy && t.ContextID == "" {
		t.ContextID = w.SessionID
	}
	st, ok := wire.ParseState(v, w.Status.State)
	if !ok {
		return t, malformed(field+".status.state", "got "+strconv.Quote(w.Status.State)+", expected a task state of A2A "+v)
	}
	t.State = st
	if v == wire.VersionLegacy {
		var s *string
		if len(w.Status.Message) > 0 && json.Unmarshal(w.Status.Message, &s) != nil {
			// A status message that is an object is the newer wire; read
			// it so, rather than fail as the dialect's own client does.
			m, err := decodeRemoteMessage(wire.V03, w.Status.Message, field+".status.message")
			if err != nil {
				return t, err
			}
			if m != nil {
				t.StatusMessage = remoteParts(m.Parts)
			}
		} else if s != nil && *s != "" {
			t.StatusMessage = []Part{{Kind: "text", Text: *s}}
		}
	} else {
		m, err := decodeRemoteMessage(v, w.Status.Message, field+".status.message")
		if err != nil {
			return t, err
		}
		if m != nil {
			t.StatusMessage = remoteParts(m.Parts)
		}
	}
	for i, a := range w.Artifacts {
		af := field + ".artifacts[" + strconv.Itoa(i) + "]"
		ra := Artifact{ID: a.ArtifactID, Name: a.Name}
		for j, praw := range a.Parts {
			p, err := decodeRemotePart(v, praw, af+".parts["+strconv.Itoa(j)+"]")
			if err != nil {
				return t, err
			}
			ra.Parts = append(ra.Parts, p)
		}
		t.Artifacts = append(t.Artifacts, ra)
	}
	return t, nil
}

func decodeRemotePart(v string, raw json.RawMessage, field string) (Part, error) {
	if v == wire.VersionLegacy {
		p, err := wire.DecodeLegacyPart(raw, field)
		if err != nil {
			return Part{}, asWire(err)
		}
		return remoteParts([]wire.Part{p})[0], nil
	}
	p, err := wire.DecodePart(v, raw, field)
	if err != nil {
		return Part{}, asWire(err)
	}
	return remoteParts([]wire.Part{p})[0], nil
}

// messageTask is a message a remote answered with, as a completed task.
func messageTask(m wire.Message) Task {
	return Task{ID: m.TaskID, ContextID: m.ContextID, State: wire.StateCompleted, Direct: true,
		Artifacts: []Artifact{{Name: "message", Parts: remoteParts(m.Parts)}}}
}

// decodeSendResult reads a send's answer: v0.3 a Task or a Message (told
// apart by kind, or by the fields they have), v1.0 {"task"} or
// {"message"}.
func decodeSendResult(v string, raw json.RawMessage, field string) (Task, error) {
	if v == wire.V10 {
		var w struct {
			Task    json.RawMessage `json:"task"`
			Message json.RawMessage `json:"message"`
		}
		if !wire.IsObject(raw) || json.Unmarshal(raw, &w) != nil {
			return Task{}, malformed(field, `expected {"task": ...} or {"message": ...}`)
		}
		switch {
		case len(w.Task) > 0 && string(w.Task) != "null":
			return decodeRemoteTask(v, w.Task, field+".task")
		case len(w.Message) > 0 && string(w.Message) != "null":
			m, err := decodeRemoteMessage(v, w.Message, field+".message")
			if err != nil || m == nil {
				return Task{}, errors.Join(err, malformed(field+".message", "expected a message with parts"))
			}
			return messageTask(*m), nil
		}
		return Task{}, malformed(field, `expected {"task": ...} or {"message": ...}`)
	}
	var probe struct {
		Kind   string          `json:"kind"`
		Status json.RawMessage `json:"status"`
		Parts  json.RawMessage `json:"parts"`
	}
	if !wire.IsObject(raw) || json.Unmarshal(raw, &probe) != nil {
		return Task{}, malformed(field, "expected a task or a message object")
	}
	if probe.Kind == "message" || (probe.Kind == "" && len(probe.Status) == 0 && len(probe.Parts) > 0) {
		m, err := decodeRemoteMessage(v, raw, field)
		if err != nil || m == nil {
			return Task{}, errors.Join(err, malformed(field, "expected a message with parts"))
		}
		return messageTask(*m), nil
	}
	return decodeRemoteTask(v, raw, field)
}

// streamEventWire is one event of a stream: v0.3 the object with its
// kind, v1.0 a StreamResponse naming its case.
type remoteEvent struct {
	kind     string // "task", "message", "status", "artifact"
	task     Task
	taskID   string
	ctxID    string
	state    string
	status   []Part
	artifact Artifact
	appendTo bool
	final    bool
}

func decodeRemoteEvent(v string, raw json.RawMessage, field string) (remoteEvent, error) {
	body, kind, err := eventBody(v, raw, field)
	if err != nil {
		return remoteEvent{}, err
	}
	switch kind {
	case "task":
		t, err := decodeRemoteTask(v, body, field)
		return remoteEvent{kind: "task", task: t, taskID: t.ID, ctxID: t.ContextID, final: t.Terminal() || t.Interrupted()}, err
	case "message":
		m, err := decodeRemoteMessage(v, body, field)
		if err != nil || m == nil {
			return remoteEvent{}, errors.Join(err, malformed(field, "expected a message with parts"))
		}
		t := messageTask(*m)
		return remoteEvent{kind: "message", task: t, taskID: t.ID, ctxID: t.ContextID, final: true}, nil
	case "status-update":
		return decodeStatusUpdate(v, body, field)
	case "artifact-update":
		return decodeArtifactUpdate(v, body, field)
	}
	return remoteEvent{}, malformed(field+".kind", "got "+strconv.Quote(kind)+`, expected "task", "message", "status-update" or "artifact-update"`)
}

// eventBody finds an event's object and its kind: v0.3 the object itself,
// which names its kind; v1.0 the case a StreamResponse holds.
func eventBody(v string, raw json.RawMessage, field string) (json.RawMessage, string, error) {
	if v != wire.V10 {
		var probe struct {
			Kind string `json:"kind"`
		}
		if !wire.IsObject(raw) || json.Unmarshal(raw, &probe) != nil {
			return nil, "", malformed(field, "expected an event object")
		}
		return raw, probe.Kind, nil
	}
	var w map[string]json.RawMessage
	if !wire.IsObject(raw) || json.Unmarshal(raw, &w) != nil {
		return nil, "", malformed(field, "expected a StreamResponse object")
	}
	var body json.RawMessage
	var kind string
	for k, kk := range map[string]string{"task": "task", "message": "message", "statusUpdate": "status-update", "artifactUpdate": "artifact-update"} {
		if b, ok := w[k]; ok && string(b) != "null" {
			body, kind = b, kk
		}
	}
	if kind == "" {
		return nil, "", malformed(field, "expected one of task, message, statusUpdate and artifactUpdate")
	}
	return body, kind, nil
}

func decodeStatusUpdate(v string, body json.RawMessage, field string) (remoteEvent, error) {
	var w struct {
		TaskID    string `json:"taskId"`
		ContextID string `json:"contextId"`
		Final     bool   `json:"final"`
		Status    struct {
			State   string          `json:"state"`
			Message json.RawMessage `json:"message"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return remoteEvent{}, malformed(field, "expected a status update: "+err.Error())
	}
	st, ok := wire.ParseState(v, w.Status.State)
	if !ok {
		return remoteEvent{}, malformed(field+".status.state", "got "+strconv.Quote(w.Status.State)+", expected a task state of A2A "+v)
	}
	m, err := decodeRemoteMessage(v, w.Status.Message, field+".status.message")
	if err != nil {
		return remoteEvent{}, err
	}
	ev := remoteEvent{kind: "status", taskID: w.TaskID, ctxID: w.ContextID, state: st, final: w.Final}
	if m != nil {
		ev.status = remoteParts(m.Parts)
	}
	// v1.0 has no final flag: the stream ends after a terminal or
	// interrupted state.
	if st != "" {
		t := Task{State: st}
		ev.final = ev.final || t.Terminal() || t.Interrupted()
	}
	return ev, nil
}

func decodeArtifactUpdate(v string, body json.RawMessage, field string) (remoteEvent, error) {
	var w struct {
		TaskID    string `json:"taskId"`
		ContextID string `json:"contextId"`
		Append    bool   `json:"append"`
		Artifact  struct {
			ArtifactID string            `json:"artifactId"`
			Name       string            `json:"name"`
			Parts      []json.RawMessage `json:"parts"`
		} `json:"artifact"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return remoteEvent{}, malformed(field, "expected an artifact update: "+err.Error())
	}
	ev := remoteEvent{kind: "artifact", taskID: w.TaskID, ctxID: w.ContextID, appendTo: w.Append,
		artifact: Artifact{ID: w.Artifact.ArtifactID, Name: w.Artifact.Name}}
	for j, praw := range w.Artifact.Parts {
		p, err := decodeRemotePart(v, praw, field+".artifact.parts["+strconv.Itoa(j)+"]")
		if err != nil {
			return remoteEvent{}, err
		}
		ev.artifact.Parts = append(ev.artifact.Parts, p)
	}
	return ev, nil
}

// apply folds an event into the task as known so far.
func (ev remoteEvent) apply(t Task) Task {
	switch ev.kind {
	case "task", "message":
		return ev.task
	}
	if t.ID == "" {
		t.ID = ev.taskID
	}
	if t.ContextID == "" {
		t.ContextID = ev.ctxID
	}
	switch ev.kind {
	case "status":
		t.State, t.StatusMessage = ev.state, ev.status
	case "artifact":
		arts := append([]Artifact(nil), t.Artifacts...)
		for i, a := range arts {
			if a.ID != "" && a.ID == ev.artifact.ID {
				if ev.appendTo {
					a.Parts = append(append([]Part(nil), a.Parts...), ev.artifact.Parts...)
					arts[i] = a
				} else {
					arts[i] = ev.artifact
				}
				t.Artifacts = arts
				return t
			}
		}
		t.Artifacts = append(arts, ev.artifact)
	}
	return t
}

// encodeLegacyMessage writes a message in the tasks/send dialect: typed
// parts (text and data only), metadata as given.
func encodeLegacyMessage(m wire.Message) (obj, error) {
	parts := make([]obj, 0, len(m.Parts))
	for i, p := range m.Parts {
		switch p.Kind {
		case "text":
			parts = append(parts, obj{"type": "text", "text": p.Text, "data": nil})
		case "data":
			data := p.Data
			if !wire.IsObject(data) {
				data = json.RawMessage(`{"value":` + string(data) + `}`)
			}
			parts = append(parts, obj{"type": "data", "text": nil, "data": data})
		default:
			return nil, malformed("message.parts["+strconv.Itoa(i)+"]", "a "+p.Kind+" part, which the legacy tasks/send dialect cannot carry (text and data only)")
		}
	}
	role := m.Role
	if role == "" {
		role = "user"
	}
	o := obj{"role": role, "parts": parts}
	if m.Metadata != nil {
		o["metadata"] = m.Metadata
	}
	return o, nil
}

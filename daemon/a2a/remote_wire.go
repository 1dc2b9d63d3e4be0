package a2a

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Reading what a remote answers, in each generation, into RemoteTask.
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
	var re *rpcError
	if errors.As(err, &re) {
		return &wireError{re.msg}
	}
	return err
}

// decodeRemoteMessage reads a message from a remote, defaulting what a
// lenient server leaves out (the id, the role); a message without parts
// is nil.
func decodeRemoteMessage(v string, raw json.RawMessage, field string) (*message, error) {
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
		fields["role"] = json.RawMessage(map[string]string{v03: `"agent"`, v10: `"ROLE_AGENT"`}[v])
	}
	patched, _ := json.Marshal(fields)
	m, err := decodeMessage(v, patched, field)
	if err != nil {
		return nil, asWire(err)
	}
	if m.messageID == "remote" {
		m.messageID = ""
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
func decodeRemoteTask(v string, raw json.RawMessage, field string) (RemoteTask, error) {
	var w taskWire
	if !isObject(raw) {
		return RemoteTask{}, malformed(field, "expected a task object")
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return RemoteTask{}, malformed(field, "expected a task object: "+err.Error())
	}
	if w.ID == "" {
		return RemoteTask{}, malformed(field+".id", "missing, expected the task's id")
	}
	t := RemoteTask{ID: w.ID, ContextID: w.ContextID}
	if v == versionLegacy && t.ContextID == "" {
		t.ContextID = w.SessionID
	}
	st, ok := neutralState(v, w.Status.State)
	if !ok {
		return t, malformed(field+".status.state", "got "+strconv.Quote(w.Status.State)+", expected a task state of A2A "+v)
	}
	t.State = st
	if v == versionLegacy {
		var s *string
		if len(w.Status.Message) > 0 && json.Unmarshal(w.Status.Message, &s) != nil {
			// A status message that is an object is the newer wire; read
			// it so, rather than fail as the dialect's own client does.
			m, err := decodeRemoteMessage(v03, w.Status.Message, field+".status.message")
			if err != nil {
				return t, err
			}
			if m != nil {
				t.StatusMessage = remoteParts(m.parts)
			}
		} else if s != nil && *s != "" {
			t.StatusMessage = []RemotePart{{Kind: "text", Text: *s}}
		}
	} else {
		m, err := decodeRemoteMessage(v, w.Status.Message, field+".status.message")
		if err != nil {
			return t, err
		}
		if m != nil {
			t.StatusMessage = remoteParts(m.parts)
		}
	}
	for i, a := range w.Artifacts {
		af := field + ".artifacts[" + strconv.Itoa(i) + "]"
		ra := RemoteArtifact{ID: a.ArtifactID, Name: a.Name}
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

func decodeRemotePart(v string, raw json.RawMessage, field string) (RemotePart, error) {
	if v == versionLegacy {
		p, err := decodeLegacyPart(raw, field)
		if err != nil {
			return RemotePart{}, asWire(err)
		}
		return remoteParts([]part{p})[0], nil
	}
	p, err := decodePart(v, raw, field)
	if err != nil {
		return RemotePart{}, asWire(err)
	}
	return remoteParts([]part{p})[0], nil
}

// messageTask is a message a remote answered with, as a completed task.
func messageTask(m message) RemoteTask {
	return RemoteTask{ID: m.taskID, ContextID: m.contextID, State: RemoteCompleted, Direct: true,
		Artifacts: []RemoteArtifact{{Name: "message", Parts: remoteParts(m.parts)}}}
}

// decodeSendResult reads a send's answer: v0.3 a Task or a Message (told
// apart by kind, or by the fields they have), v1.0 {"task"} or
// {"message"}.
func decodeSendResult(v string, raw json.RawMessage, field string) (RemoteTask, error) {
	if v == v10 {
		var w struct {
			Task    json.RawMessage `json:"task"`
			Message json.RawMessage `json:"message"`
		}
		if !isObject(raw) || json.Unmarshal(raw, &w) != nil {
			return RemoteTask{}, malformed(field, `expected {"task": ...} or {"message": ...}`)
		}
		switch {
		case len(w.Task) > 0 && string(w.Task) != "null":
			return decodeRemoteTask(v, w.Task, field+".task")
		case len(w.Message) > 0 && string(w.Message) != "null":
			m, err := decodeRemoteMessage(v, w.Message, field+".message")
			if err != nil || m == nil {
				return RemoteTask{}, errors.Join(err, malformed(field+".message", "expected a message with parts"))
			}
			return messageTask(*m), nil
		}
		return RemoteTask{}, malformed(field, `expected {"task": ...} or {"message": ...}`)
	}
	var probe struct {
		Kind   string          `json:"kind"`
		Status json.RawMessage `json:"status"`
		Parts  json.RawMessage `json:"parts"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &probe) != nil {
		return RemoteTask{}, malformed(field, "expected a task or a message object")
	}
	if probe.Kind == "message" || (probe.Kind == "" && len(probe.Status) == 0 && len(probe.Parts) > 0) {
		m, err := decodeRemoteMessage(v, raw, field)
		if err != nil || m == nil {
			return RemoteTask{}, errors.Join(err, malformed(field, "expected a message with parts"))
		}
		return messageTask(*m), nil
	}
	return decodeRemoteTask(v, raw, field)
}

// streamEventWire is one event of a stream: v0.3 the object with its
// kind, v1.0 a StreamResponse naming its case.
type remoteEvent struct {
	kind     string // "task", "message", "status", "artifact"
	task     RemoteTask
	taskID   string
	ctxID    string
	state    string
	status   []RemotePart
	artifact RemoteArtifact
	appendTo bool
	final    bool
}

func decodeRemoteEvent(v string, raw json.RawMessage, field string) (remoteEvent, error) {
	var body json.RawMessage
	var kind string
	if v == v10 {
		var w map[string]json.RawMessage
		if !isObject(raw) || json.Unmarshal(raw, &w) != nil {
			return remoteEvent{}, malformed(field, "expected a StreamResponse object")
		}
		for k, kk := range map[string]string{"task": "task", "message": "message", "statusUpdate": "status-update", "artifactUpdate": "artifact-update"} {
			if b, ok := w[k]; ok && string(b) != "null" {
				body, kind = b, kk
			}
		}
		if kind == "" {
			return remoteEvent{}, malformed(field, "expected one of task, message, statusUpdate and artifactUpdate")
		}
	} else {
		var probe struct {
			Kind string `json:"kind"`
		}
		if !isObject(raw) || json.Unmarshal(raw, &probe) != nil {
			return remoteEvent{}, malformed(field, "expected an event object")
		}
		body, kind = raw, probe.Kind
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
		st, ok := neutralState(v, w.Status.State)
		if !ok {
			return remoteEvent{}, malformed(field+".status.state", "got "+strconv.Quote(w.Status.State)+", expected a task state of A2A "+v)
		}
		m, err := decodeRemoteMessage(v, w.Status.Message, field+".status.message")
		if err != nil {
			return remoteEvent{}, err
		}
		ev := remoteEvent{kind: "status", taskID: w.TaskID, ctxID: w.ContextID, state: st, final: w.Final}
		if m != nil {
			ev.status = remoteParts(m.parts)
		}
		// v1.0 has no final flag: the stream ends after a terminal or
		// interrupted state.
		if st != "" {
			t := RemoteTask{State: st}
			ev.final = ev.final || t.Terminal() || t.Interrupted()
		}
		return ev, nil
	case "artifact-update":
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
			artifact: RemoteArtifact{ID: w.Artifact.ArtifactID, Name: w.Artifact.Name}}
		for j, praw := range w.Artifact.Parts {
			p, err := decodeRemotePart(v, praw, field+".artifact.parts["+strconv.Itoa(j)+"]")
			if err != nil {
				return remoteEvent{}, err
			}
			ev.artifact.Parts = append(ev.artifact.Parts, p)
		}
		return ev, nil
	}
	return remoteEvent{}, malformed(field+".kind", "got "+strconv.Quote(kind)+`, expected "task", "message", "status-update" or "artifact-update"`)
}

// apply folds an event into the task as known so far.
func (ev remoteEvent) apply(t RemoteTask) RemoteTask {
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
		arts := append([]RemoteArtifact(nil), t.Artifacts...)
		for i, a := range arts {
			if a.ID != "" && a.ID == ev.artifact.ID {
				if ev.appendTo {
					a.Parts = append(append([]RemotePart(nil), a.Parts...), ev.artifact.Parts...)
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
func encodeLegacyMessage(m message) (obj, error) {
	parts := make([]obj, 0, len(m.parts))
	for i, p := range m.parts {
		switch p.kind {
		case "text":
			parts = append(parts, obj{"type": "text", "text": p.text, "data": nil})
		case "data":
			data := p.data
			if !isObject(data) {
				data = json.RawMessage(`{"value":` + string(data) + `}`)
			}
			parts = append(parts, obj{"type": "data", "text": nil, "data": data})
		default:
			return nil, malformed("message.parts["+strconv.Itoa(i)+"]", "a "+p.kind+" part, which the legacy tasks/send dialect cannot carry (text and data only)")
		}
	}
	role := m.role
	if role == "" {
		role = "user"
	}
	o := obj{"role": role, "parts": parts}
	if m.metadata != nil {
		o["metadata"] = m.metadata
	}
	return o, nil
}

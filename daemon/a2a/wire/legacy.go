package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// The legacy dialect's messages: decoded into the neutral model (a task
// sent through the legacy binding, read by the other bindings; a legacy
// message sent on to a remote) and encoded from it (a message for a legacy
// remote).

// VersionLegacy is the A2A origin version of tasks sent through it.
const VersionLegacy = "legacy"

// DecodeLegacyMessage decodes a dialect message {role, parts, metadata}
// into the neutral model, with its metadata's fields. Other keys, in the
// message or its parts, are accepted as the dialect's own receiver
// accepts them: the message is kept verbatim, so they read back exactly.
func DecodeLegacyMessage(raw json.RawMessage, field string) (Message, map[string]json.RawMessage, error) {
	fields, err := LegacyObject(raw, field)
	if err != nil {
		return Message{}, nil, err
	}
	m := Message{Role: "user"}
	if r, ok := fields["role"]; ok && string(r) != "null" {
		var role string
		if json.Unmarshal(r, &role) != nil || (role != "user" && role != "agent") {
			return Message{}, nil, LegacyInvalid(field+".role", "got "+string(r)+", expected \"user\" or \"agent\"")
		}
		m.Role = role
	}
	var meta map[string]json.RawMessage
	if r, ok := fields["metadata"]; ok && string(r) != "null" {
		if meta, err = LegacyObject(r, field+".metadata"); err != nil {
			return Message{}, nil, err
		}
		m.Metadata = r
	}
	var parts []json.RawMessage
	r, ok := fields["parts"]
	if !ok || string(r) == "null" {
		return Message{}, nil, LegacyInvalid(field+".parts", "missing, expected an array of parts such as {\"type\":\"text\",\"text\":\"...\"}")
	}
	if json.Unmarshal(r, &parts) != nil {
		return Message{}, nil, LegacyInvalid(field+".parts", "got "+LegacyShort(r)+", expected an array of parts")
	}
	if len(parts) == 0 {
		return Message{}, nil, LegacyInvalid(field+".parts", "got an empty array, expected at least one part")
	}
	for i, raw := range parts {
		p, err := DecodeLegacyPart(raw, field+".parts["+strconv.Itoa(i)+"]")
		if err != nil {
			return Message{}, nil, err
		}
		m.Parts = append(m.Parts, p)
	}
	return m, meta, nil
}

// DecodeLegacyPart decodes {type, text, data, metadata}: a text part has
// text, a data part an object as data; the other field may be null.
func DecodeLegacyPart(raw json.RawMessage, field string) (Part, error) {
	fields, err := LegacyObject(raw, field)
	if err != nil {
		return Part{}, err
	}
	var p Part
	typ, ok := fields["type"]
	if !ok || json.Unmarshal(typ, &p.Kind) != nil || (p.Kind != "text" && p.Kind != "data") {
		got := "missing"
		if ok {
			got = "got " + LegacyShort(typ)
		}
		return Part{}, LegacyInvalid(field+".type", got+", expected \"text\" or \"data\" (file parts are not served by the legacy binding)")
	}
	if md, ok := fields["metadata"]; ok && string(md) != "null" {
		if _, err := LegacyObject(md, field+".metadata"); err != nil {
			return Part{}, err
		}
		p.Metadata = md
	}
	text, hasText := fields["text"]
	data, hasData := fields["data"]
	hasText = hasText && string(text) != "null"
	hasData = hasData && string(data) != "null"
	switch p.Kind {
	case "text":
		if !hasText || json.Unmarshal(text, &p.Text) != nil {
			got := "missing"
			if hasText {
				got = "got " + LegacyShort(text)
			}
			return Part{}, LegacyInvalid(field+".text", got+", expected a string (a text part carries text)")
		}
		if hasData {
			return Part{}, LegacyInvalid(field+".data", "got "+LegacyShort(data)+", expected null in a text part")
		}
	case "data":
		if !hasData {
			return Part{}, LegacyInvalid(field+".data", "missing, expected an object (a data part carries data)")
		}
		if _, err := LegacyObject(data, field+".data"); err != nil {
			return Part{}, err
		}
		if hasText {
			return Part{}, LegacyInvalid(field+".text", "got "+LegacyShort(text)+", expected null in a data part")
		}
		p.Data = data
	}
	return p, nil
}

// LegacyObject reads a JSON object's fields.
func LegacyObject(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		got := "missing"
		if len(raw) > 0 {
			got = "got " + LegacyShort(raw)
		}
		return nil, LegacyInvalid(field, got+", expected an object")
	}
	return fields, nil
}

func LegacyInvalid(field, want string) *Error {
	return &Error{Code: CodeInvalidParams, Field: field, Message: field + ": " + want}
}

// LegacyShort quotes a JSON value in an error, cut to a readable length.
func LegacyShort(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "..."
	}
	return s
}

// legacyOrigin decodes a legacy task's message for the other bindings'
// history; nil when it cannot be (it was checked when sent).
func legacyOrigin(o *mailbox.A2AOrigin) *Message {
	m, _, err := DecodeLegacyMessage(o.Message, "message")
	if err != nil {
		return nil
	}
	m.MessageID, m.ContextID = o.MessageID, o.ContextID
	return &m
}

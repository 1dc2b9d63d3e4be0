package a2a

import (
	"encoding/json"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// A remote's task as the daemon sees it, whatever the binding, and what
// it means for the mailbox task it delivers.

// Neutral states of a remote task.
const (
	RemoteSubmitted     = "submitted"
	RemoteWorking       = "working"
	RemoteInputRequired = "input-required"
	RemoteAuthRequired  = "auth-required"
	RemoteCompleted     = "completed"
	RemoteFailed        = "failed"
	RemoteRejected      = "rejected"
	RemoteCanceled      = "canceled"
	RemoteUnknown       = "unknown"
)

// remoteStates10 reads the v1.0 spelling of a state.
var remoteStates10 = map[string]string{
	"TASK_STATE_SUBMITTED":      RemoteSubmitted,
	"TASK_STATE_WORKING":        RemoteWorking,
	"TASK_STATE_INPUT_REQUIRED": RemoteInputRequired,
	"TASK_STATE_AUTH_REQUIRED":  RemoteAuthRequired,
	"TASK_STATE_COMPLETED":      RemoteCompleted,
	"TASK_STATE_FAILED":         RemoteFailed,
	"TASK_STATE_REJECTED":       RemoteRejected,
	"TASK_STATE_CANCELED":       RemoteCanceled,
	"TASK_STATE_UNSPECIFIED":    RemoteUnknown,
}

// neutralState reads a state in generation v ("legacy" spells it as v0.3);
// ok is false for a spelling it does not know.
func neutralState(v, s string) (string, bool) {
	if v == v10 {
		st, ok := remoteStates10[s]
		return st, ok
	}
	switch s {
	case RemoteSubmitted, RemoteWorking, RemoteInputRequired, RemoteAuthRequired, RemoteCompleted, RemoteFailed, RemoteRejected, RemoteCanceled, RemoteUnknown:
		return s, true
	case "cancelled":
		return RemoteCanceled, true
	}
	return "", false
}

// RemotePart is one part of a remote's message or artifact.
type RemotePart struct {
	// Kind is "text", "data" or "file".
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
	// Data is a data part's JSON value.
	Data json.RawMessage `json:"data,omitempty"`
	// A file part has a URL or Raw (base64) content.
	URL       string `json:"url,omitempty"`
	Raw       string `json:"raw,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	Name      string `json:"name,omitempty"`
}

// RemoteArtifact is an output of a remote task.
type RemoteArtifact struct {
	ID    string       `json:"id,omitempty"`
	Name  string       `json:"name,omitempty"`
	Parts []RemotePart `json:"parts"`
}

// RemoteTask is a remote's task as last seen.
type RemoteTask struct {
	// ID and ContextID are the remote's ids: what a continuation, Get,
	// Cancel and Resubscribe name. A remote that answered with a message
	// may give none.
	ID        string `json:"id"`
	ContextID string `json:"contextId,omitempty"`
	// State is one of the Remote* states.
	State string `json:"state"`
	// StatusMessage is the parts of the status's message: why it failed,
	// the question it asks; nil when it has none.
	StatusMessage []RemotePart     `json:"statusMessage,omitempty"`
	Artifacts     []RemoteArtifact `json:"artifacts,omitempty"`
	// Direct: the remote answered with a message, not a task; the
	// message's parts are the one artifact, and the task is completed.
	Direct bool `json:"direct,omitempty"`
}

// Terminal reports whether the remote task is finished.
func (t RemoteTask) Terminal() bool {
	switch t.State {
	case RemoteCompleted, RemoteFailed, RemoteRejected, RemoteCanceled:
		return true
	}
	return false
}

// Interrupted reports whether the remote waits for its caller: it asked
// for input or for authentication.
func (t RemoteTask) Interrupted() bool {
	return t.State == RemoteInputRequired || t.State == RemoteAuthRequired
}

// StatusText is the status message's text parts, joined by newlines.
func (t RemoteTask) StatusText() string {
	var texts []string
	for _, p := range t.StatusMessage {
		if p.Kind == "text" && strings.TrimSpace(p.Text) != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Outcome is what the mailbox records for the remote task's state: a
// result to post (its TaskID and LeaseID left for the caller to set), and
// final true; or final false while the remote is still on it (submitted,
// working, unknown). completed is ok with the artifacts as content (the
// status message's parts when there are none); failed is error with the
// status message's text as error_message; rejected is rejected; canceled
// (by the remote: a cancel the daemon asked for is the daemon's to
// record) is an error saying so; input-required and auth-required are the
// mailbox's questions, the status message's parts their content.
func (t RemoteTask) Outcome() (r mailbox.Result, final bool) {
	r.Content = []mailbox.Content{}
	for _, a := range t.Artifacts {
		r.Content = append(r.Content, contentOf(a.Parts)...)
	}
	why := t.StatusText()
	switch t.State {
	case RemoteCompleted:
		r.Status = mailbox.StatusOK
		if len(r.Content) == 0 {
			r.Content = contentOf(t.StatusMessage)
		}
	case RemoteFailed:
		r.Status, r.ErrorMessage = mailbox.StatusError, or(why, "the remote agent reported that the task failed, without saying why")
	case RemoteRejected:
		r.Status, r.ErrorMessage = mailbox.StatusRejected, or(why, "the remote agent rejected the task, without saying why")
	case RemoteCanceled:
		r.Status, r.ErrorMessage = mailbox.StatusError, "the remote agent canceled the task"
		if why != "" {
			r.ErrorMessage += ": " + why
		}
	case RemoteInputRequired, RemoteAuthRequired:
		r.Status = mailbox.StatusInputRequired
		if t.State == RemoteAuthRequired {
			r.Status = mailbox.StatusAuthRequired
		}
		r.Content = contentOf(t.StatusMessage)
		if len(r.Content) == 0 {
			// The mailbox needs a question to show the sender.
			r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: "the remote agent asks for " +
				map[bool]string{true: "authentication", false: "input"}[t.State == RemoteAuthRequired] + " without saying what"}}
		}
	default:
		return mailbox.Result{}, false
	}
	return r, true
}

func or(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// contentOf maps parts to mailbox content: text to text, data to json,
// a file to json {"url"|"raw", "mediaType", "name"}.
func contentOf(ps []RemotePart) []mailbox.Content {
	out := []mailbox.Content{}
	for _, p := range ps {
		switch p.Kind {
		case "text":
			out = append(out, mailbox.Content{Type: mailbox.ContentText, Text: p.Text})
		case "data":
			out = append(out, mailbox.Content{Type: mailbox.ContentJSON, Value: p.Data})
		case "file":
			f := map[string]string{}
			if p.URL != "" {
				f["url"] = p.URL
			} else {
				f["raw"] = p.Raw
			}
			if p.MediaType != "" {
				f["mediaType"] = p.MediaType
			}
			if p.Name != "" {
				f["name"] = p.Name
			}
			v, _ := json.Marshal(f)
			out = append(out, mailbox.Content{Type: mailbox.ContentJSON, Value: v})
		}
	}
	return out
}

// remoteParts maps neutral parts to RemoteParts.
func remoteParts(ps []part) []RemotePart {
	if len(ps) == 0 {
		return nil
	}
	out := make([]RemotePart, len(ps))
	for i, p := range ps {
		rp := RemotePart{Kind: p.kind, Text: p.text, Data: p.data, MediaType: p.mediaType, Name: p.filename}
		if p.kind == "file" {
			rp.URL, rp.Raw = p.fileURI, p.fileBytes
		}
		out[i] = rp
	}
	return out
}

package remote

import (
	"encoding/json"
	"strings"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// A remote's task as the daemon sees it, whatever the binding, and what
// it means for the mailbox task it delivers.

// Part is one part of a remote's message or artifact.
type Part struct {
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

// Artifact is an output of a remote task.
type Artifact struct {
	ID    string `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
	Parts []Part `json:"parts"`
}

// Task is a remote's task as last seen.
type Task struct {
	// ID and ContextID are the remote's ids: what a continuation, Get,
	// Cancel and Resubscribe name. A remote that answered with a message
	// may give none.
	ID        string `json:"id"`
	ContextID string `json:"contextId,omitempty"`
	// State is one of wire's neutral states (wire.StateCompleted, ...).
	State string `json:"state"`
	// StatusMessage is the parts of the status's message: why it failed,
	// the question it asks; nil when it has none.
	StatusMessage []Part     `json:"statusMessage,omitempty"`
	Artifacts     []Artifact `json:"artifacts,omitempty"`
	// Direct: the remote answered with a message, not a task; the
	// message's parts are the one artifact, and the task is completed.
	Direct bool `json:"direct,omitempty"`
}

// Terminal reports whether the remote task is finished.
func (t Task) Terminal() bool {
	switch t.State {
	case wire.StateCompleted, wire.StateFailed, wire.StateRejected, wire.StateCanceled:
		return true
	}
	return false
}

// Interrupted reports whether the remote waits for its caller: it asked
// for input or for authentication.
func (t Task) Interrupted() bool {
	return t.State == wire.StateInputRequired || t.State == wire.StateAuthRequired
}

// StatusText is the status message's text parts, joined by newlines.
func (t Task) StatusText() string {
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
func (t Task) Outcome() (r mailbox.Result, final bool) {
	r.Content = []mailbox.Content{}
	for _, a := range t.Artifacts {
		r.Content = append(r.Content, contentOf(a.Parts)...)
	}
	why := t.StatusText()
	switch t.State {
	case wire.StateCompleted:
		r.Status = mailbox.StatusOK
		if len(r.Content) == 0 {
			r.Content = contentOf(t.StatusMessage)
		}
	case wire.StateFailed:
		r.Status, r.ErrorMessage = mailbox.StatusError, or(why, "the remote agent reported that the task failed, without saying why")
	case wire.StateRejected:
		r.Status, r.ErrorMessage = mailbox.StatusRejected, or(why, "the remote agent rejected the task, without saying why")
	case wire.StateCanceled:
		r.Status, r.ErrorMessage = mailbox.StatusError, "the remote agent canceled the task"
		if why != "" {
			r.ErrorMessage += ": " + why
		}
	case wire.StateInputRequired, wire.StateAuthRequired:
		r.Status = mailbox.StatusInputRequired
		if t.State == wire.StateAuthRequired {
			r.Status = mailbox.StatusAuthRequired
		}
		r.Content = contentOf(t.StatusMessage)
		if len(r.Content) == 0 {
			// The mailbox needs a question to show the sender.
			r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: "the remote agent asks for " +
				map[bool]string{true: "authentication", false: "input"}[t.State == wire.StateAuthRequired] + " without saying what"}}
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
func contentOf(ps []Part) []mailbox.Content {
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
func remoteParts(ps []wire.Part) []Part {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Part, len(ps))
	for i, p := range ps {
		rp := Part{Kind: p.Kind, Text: p.Text, Data: p.Data, MediaType: p.MediaType, Name: p.Filename}
		if p.Kind == "file" {
			rp.URL, rp.Raw = p.FileURI, p.FileBytes
		}
		out[i] = rp
	}
	return out
}

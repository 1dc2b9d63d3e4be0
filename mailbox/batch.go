package mailbox

import (
	"errors"
	"strconv"
	"strings"
)

// Batches: several tasks sent, or results posted, in one request. Each item
// is decided on its own, exactly as a single request would be (policy,
// validation, dedupe, the lease guard), and is answered in its place;
// the items accepted are appended as one unit, so they are durable
// together, after one sync, or not at all.

// KindTasksBatch and KindResultsBatch answer POST /a2a/tasks/batch and
// /a2a/results/batch.
const (
	KindTasksBatch   = "a2a_tasks_batch"
	KindResultsBatch = "a2a_results_batch"
)

// BatchItem is the answer for one item of a batch, at its index: queued
// (a2a_task_queued, with the task id, deduplicated or not), posted
// (a2a_result_posted), or refused (error, with the error's code, message
// and details, the message and field naming the item, as in
// tasks[3].recipient).
type BatchItem struct {
	Index        int           `json:"index"`
	Kind         string        `json:"kind"`
	TaskID       string        `json:"task_id,omitempty"`
	Deduplicated bool          `json:"deduplicated,omitempty"`
	Code         string        `json:"code,omitempty"`
	Message      string        `json:"message,omitempty"`
	Details      *ErrorDetails `json:"details,omitempty"`
}

// OK reports whether the item was accepted.
func (b BatchItem) OK() bool { return b.Kind != KindError }

// Refused is the answer for item index refused with err. The message and
// the field are prefixed with where the item is (tasks[3]); an error that
// is no *Error is reported as internal, never shown.
func Refused(list string, index int, err error) BatchItem {
	at := list + "[" + strconv.Itoa(index) + "]"
	b := BatchItem{Index: index, Kind: KindError, Code: ErrorCode(err), Message: at + ": " + ErrorMessage(err)}
	var e *Error
	if errors.As(err, &e) && e.Details != nil {
		d := *e.Details
		if d.Field != "" {
			// The message starts with the field it names: name it in full.
			if strings.HasPrefix(e.Message, d.Field) {
				b.Message = at + "." + e.Message
			}
			d.Field = at + "." + d.Field
		}
		b.Details = &d
	}
	return b
}

// BatchResponse answers a batch: one item per item sent, in order.
type BatchResponse struct {
	Kind  string      `json:"kind"`
	Items []BatchItem `json:"items"`
}

// Place puts got, the answers a layer gave for the items at the indexes at
// of a request (in that order), into out at those places, numbered as the
// request numbers them.
func Place(list string, out []BatchItem, at []int, got []BatchItem) {
	for k, i := range at {
		b := got[k]
		if !b.OK() {
			b = Renumber(list, b, k, i)
		}
		b.Index = i
		out[i] = b
	}
}

// Renumber moves a refusal of item k of a list to item i: a layer that
// passed on only some items of a request says where the item is in the
// request.
func Renumber(list string, b BatchItem, k, i int) BatchItem {
	if k == i {
		return b
	}
	from, to := list+"["+strconv.Itoa(k)+"]", list+"["+strconv.Itoa(i)+"]"
	b.Message = strings.Replace(b.Message, from, to, 1)
	if b.Details != nil && strings.HasPrefix(b.Details.Field, from) {
		d := *b.Details
		d.Field = to + strings.TrimPrefix(d.Field, from)
		b.Details = &d
	}
	return b
}

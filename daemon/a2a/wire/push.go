package wire

import (
	"encoding/json"

	"github.com/mailroom/mailroom/mailbox"
)

// PushBody is what a push notification of a task's change at seq posts:
// the task as it stood after that change, in the generation it was sent
// in: v0.3 the Task (as the v0.3 SDKs' senders post it), v1.0 a
// StreamResponse holding the Task. A task sent otherwise is told in v1.0.
func PushBody(rec mailbox.TaskRecord, seq uint64) (body []byte, contentType string) {
	rec = Rewind(rec, seq)
	v := V10
	origin := DecodeOrigin(rec)
	switch a := rec.Task.A2A; {
	case a == nil:
		// A native task: no message of its own, its id for a context.
		rec.Task.A2A = &mailbox.A2AOrigin{Version: "1.0", ContextID: rec.Task.ID}
	case a.Version != "1.0":
		v = V03
	}
	var o any = EncodeTask(v, View(rec, origin), true)
	if v == V10 {
		o = obj{"task": o}
	}
	b, err := json.Marshal(o)
	if err != nil {
		// The task's view is made of values the log read back: it always
		// encodes.
		panic("a2a: a task view does not encode: " + err.Error())
	}
	return b, "application/json"
}

package mailbox

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	tid  = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	tid2 = "0b7e1f6a-3c1d-4c52-9d55-2f0e8f1a9b10"
)

func strp(s string) *string { return &s }
func i64p(v int64) *int64   { return &v }

func validTask() Task {
	return Task{ID: tid, Sender: "planner@local", Recipient: "worker@local", IntentText: "summarize the report"}
}

func TestNormalizeTaskErrors(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Task)
		field string
		want  string // a piece of the message
	}{
		{"bad id", func(t *Task) { t.ID = "nope" }, "id", `id: got "nope", expected a UUID`},
		{"empty sender", func(t *Task) { t.Sender = "" }, "sender", `sender: got "", expected a non-empty agent id`},
		{"sender with space", func(t *Task) { t.Sender = "a b" }, "sender", `sender: got "a b", whose character ' ' (U+0020) at byte 1 is not allowed`},
		{"long sender", func(t *Task) { t.Sender = strings.Repeat("a", MaxAgentIDBytes+1) }, "sender", "expected an agent id of at most 200 bytes"},
		{"empty recipient", func(t *Task) { t.Recipient = "" }, "recipient", `recipient: got ""`},
		{"empty intent", func(t *Task) { t.IntentText = "  " }, "intent_text", `intent_text: got "  ", expected a non-empty description`},
		{"invalid utf8 intent", func(t *Task) { t.IntentText = "a\xffb" }, "intent_text", "invalid UTF-8"},
		{"empty kind", func(t *Task) { t.TaskKind = strp("") }, "task_kind", `task_kind: got "", expected a non-empty kind`},
		{"bad parent", func(t *Task) { t.Parent = "123" }, "parent", `parent: got "123", expected a UUID`},
		{"self parent", func(t *Task) { t.Parent = tid }, "parent", "the task's own id"},
		{"negative deadline", func(t *Task) { t.DeadlineMs = i64p(-5) }, "deadline_ms", "deadline_ms: got -5, expected absolute unix milliseconds"},
		{"zero deadline", func(t *Task) { t.DeadlineMs = i64p(0) }, "deadline_ms", "deadline_ms: got 0"},
		{"bad safety", func(t *Task) { t.Idempotency = &Idempotency{DuplicateSafety: "maybe", Key: "k"} }, "idempotency.duplicate_safety", `got "maybe", expected "unsafe" or "idempotent"`},
		{"empty key", func(t *Task) { t.Idempotency = &Idempotency{DuplicateSafety: "idempotent"} }, "idempotency.key", `idempotency.key: got "", expected a non-empty key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := validTask()
			tc.edit(&task)
			_, err := NormalizeTask(task)
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalid {
				t.Fatalf("NormalizeTask = %v, want an invalid error", err)
			}
			if e.Details == nil || e.Details.Field != tc.field {
				t.Errorf("field = %+v, want %q", e.Details, tc.field)
			}
			if !strings.Contains(e.Message, tc.want) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tc.want)
			}
		})
	}
}

func TestNormalizeTaskCanonicalizesIDs(t *testing.T) {
	task := validTask()
	task.ID = strings.ToUpper(tid)
	task.Parent = strings.ToUpper(tid2)
	got, err := NormalizeTask(task)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != tid || got.Parent != tid2 {
		t.Errorf("ids = %s, %s; want lowercase %s, %s", got.ID, got.Parent, tid, tid2)
	}
}

func TestNormalizeResultErrors(t *testing.T) {
	ok := func() Result { return Result{TaskID: tid, Status: StatusOK} }
	tests := []struct {
		name  string
		edit  func(*Result)
		field string
		want  string
	}{
		{"bad task id", func(r *Result) { r.TaskID = "x" }, "task_id", `task_id: got "x"`},
		{"unknown status", func(r *Result) { r.Status = "done" }, "status", `status: got "done", expected "ok", "error", "partial", "rejected", or "input_required" or "auth_required" to ask the sender`},
		{"bad content type", func(r *Result) { r.Content = []Content{{Type: "html"}} }, "content[0].type", `content[0].type: got "html"`},
		{"json without value", func(r *Result) { r.Content = []Content{{Type: "text", Text: "a"}, {Type: "json"}} }, "content[1].value", "expected a JSON value"},
		{"text with value", func(r *Result) { r.Content = []Content{{Type: "text", Value: json.RawMessage("1")}} }, "content[0].value", `carries "text"`},
		{"bad lease id", func(r *Result) { r.LeaseID = "lease" }, "lease_id", `lease_id: got "lease"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.edit(&r)
			_, err := NormalizeResult(r)
			var e *Error
			if !errors.As(err, &e) || e.Details == nil || e.Details.Field != tc.field || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("NormalizeResult = %#v, want field %q and message containing %q", err, tc.field, tc.want)
			}
		})
	}
}

func TestNormalizeRepairErrors(t *testing.T) {
	tests := []struct {
		name  string
		req   RepairRequest
		field string
		want  string
	}{
		{"blank reason", RepairRequest{TaskID: tid, Reason: " \t", Command: RepairCommand{Action: ActionRequeue, DuplicateRisk: RiskOperatorAccepted}}, "reason", "expected a non-empty reason"},
		{"unknown action", RepairRequest{TaskID: tid, Reason: "r", Command: RepairCommand{Action: "delete"}}, "command.action", `got "delete", expected "requeue" or "force_error"`},
		{"requeue without posture", RepairRequest{TaskID: tid, Reason: "r", Command: RepairCommand{Action: ActionRequeue}}, "command.duplicate_risk", "must state its duplicate-work posture"},
		{"requeue with message", RepairRequest{TaskID: tid, Reason: "r", Command: RepairCommand{Action: ActionRequeue, DuplicateRisk: RiskIdempotent, Message: "m"}}, "command.message", "not allowed"},
		{"force_error without message", RepairRequest{TaskID: tid, Reason: "r", Command: RepairCommand{Action: ActionForceError}}, "command.message", "expected a non-empty error message"},
		{"force_error with posture", RepairRequest{TaskID: tid, Reason: "r", Command: RepairCommand{Action: ActionForceError, Message: "m", DuplicateRisk: RiskIdempotent}}, "command.duplicate_risk", "not allowed"},
		{"bad lease id", RepairRequest{TaskID: tid, Reason: "r", Command: RepairCommand{Action: ActionForceError, Message: "m", LeaseID: "l"}}, "command.lease_id", `got "l"`},
		{"bad task id", RepairRequest{TaskID: "", Reason: "r", Command: RepairCommand{Action: ActionForceError, Message: "m"}}, "task_id", `task_id: got ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NormalizeRepair(tc.req)
			var e *Error
			if !errors.As(err, &e) || e.Details == nil || e.Details.Field != tc.field || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("NormalizeRepair = %#v, want field %q and message containing %q", err, tc.field, tc.want)
			}
		})
	}
}

func TestValidateLimit(t *testing.T) {
	tests := []struct {
		in, want int
		err      bool
	}{{0, DefaultLimit, false}, {1, 1, false}, {MaxLimit, MaxLimit, false}, {MaxLimit + 1, 0, true}, {-1, 0, true}}
	for _, tc := range tests {
		got, err := ValidateLimit("limit", tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ValidateLimit(%d) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestErrorsIsByCode(t *testing.T) {
	err := error(&Error{Code: CodeConflict, Message: "lease changed"})
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		t.Errorf("errors.Is by code broken for %v", err)
	}
	if got := ErrorBody(errors.New("disk on fire")); got.Code != CodeInternal || strings.Contains(got.Message, "disk") {
		t.Errorf("ErrorBody(non-application error) = %+v, want a generic internal error", got)
	}
	for code, status := range codeStatus {
		if CodeForStatus(status) != code || HTTPStatus(code) != status {
			t.Errorf("code %s <-> status %d does not round-trip", code, status)
		}
	}
}

func TestContentJSONShape(t *testing.T) {
	b, err := json.Marshal([]Content{{Type: ContentText}, {Type: ContentJSON, Value: json.RawMessage(`{"a":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"type":"text","text":""},{"type":"json","value":{"a":1}}]`; string(b) != want {
		t.Errorf("marshal = %s, want %s", b, want)
	}
	var c Content
	if err := json.Unmarshal([]byte(`{"type":"text","txt":"x"}`), &c); err == nil || !strings.Contains(err.Error(), "txt") {
		t.Errorf("unknown content field accepted: %v", err)
	}
}

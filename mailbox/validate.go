package mailbox

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/internal/strictjson"
)

// Input bounds. They keep one request from growing the log or state without
// limit, and keep every stored copy of a value (log line, snapshot, event
// stream, queue listing) decodable by any standard JSON reader; the HTTP
// layer also caps whole bodies at MaxBodyBytes. docs/http-api.md lists them.
const (
	MaxAgentIDBytes = 200
	MaxKindBytes    = 256
	MaxKeyBytes     = 512
	MaxReasonBytes  = 4096
	MaxBodyBytes    = 1 << 20
	// MaxValueDepth bounds how many arrays and objects a free-form value
	// (a result's json content) may nest. Stored copies sit up to six levels
	// deeper (snapshot, event, result, content); every decoder in the path
	// (encoding/json and goccy/go-json: 10,000; jq 1.6: 256; browsers:
	// thousands) is far above that.
	MaxValueDepth = 32
	// MaxDurationMs bounds every duration in milliseconds a client gives
	// (100 years): past it, now + duration overflows nothing, and JSON
	// readers without 64-bit integers (JSON.parse) still read it exactly.
	MaxDurationMs = int64(100 * 365 * 24 * 60 * 60 * 1000)
	// MaxTimestampMs is the latest absolute time a client may give:
	// 9999-12-31T23:59:59.999Z.
	MaxTimestampMs = int64(253402300799999)
	// MaxAttempts bounds a retry policy's max_attempts.
	MaxAttempts = 1000000
)

// CanonicalUUID returns id in canonical lowercase form, or an invalid-input
// error naming field when id is not a UUID.
func CanonicalUUID(field, id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return "", Invalidf(field, "got %s, expected a UUID such as 6f9619ff-8b86-4d11-b42d-00c04fc964ff", quote(id))
	}
	return u.String(), nil
}

// AgentIDAlphabet describes the characters an agent id may hold.
const AgentIDAlphabet = "lowercase ASCII letters, digits and . _ ~ @ : / + -"

// ValidateAgentID checks an agent id: 1 to MaxAgentIDBytes bytes of
// AgentIDAlphabet, none of whose slash-separated segments is "." or "..".
// The alphabet is narrow on purpose: ids that only look alike (a Cyrillic
// а for a Latin a, a zero-width space, PLANNER for planner) would
// otherwise be distinct agents, each with its own queue. Dot segments are
// refused because every agent's base URL holds its id as a path segment
// (/agents/{agent}/), and clients resolve "." and ".." there before they
// send: /agents/../ would reach another route, not the agent.
func ValidateAgentID(field, v string) error {
	if err := validAgentIDChars(field, v); err != nil {
		return err
	}
	for seg := range strings.SplitSeq(v, "/") {
		if seg == "." || seg == ".." {
			return Invalidf(field, "got %s, which holds the dot segment %s; expected an agent id without \".\" or \"..\" between slashes, such as planner@local (an agent's id is a segment of its base URL /agents/{agent}/, where clients resolve dot segments away)", quote(v), quote(seg))
		}
	}
	return nil
}

// ValidateStoredAgentID checks an id a log may hold: the rule agent ids
// were held to before dot segments were refused. Replay checks ids with
// it, so a log written by an older daemon still replays, and an agent
// registered then can still be deregistered.
func ValidateStoredAgentID(field, v string) error { return validAgentIDChars(field, v) }

func validAgentIDChars(field, v string) error {
	switch {
	case v == "":
		return Invalidf(field, "got \"\", expected a non-empty agent id such as planner@local")
	case len(v) > MaxAgentIDBytes:
		return Invalidf(field, "got %d bytes, expected an agent id of at most %d bytes", len(v), MaxAgentIDBytes)
	}
	for i := 0; i < len(v); i++ {
		b := v[i]
		if agentIDByte(b) {
			continue
		}
		if 'A' <= b && b <= 'Z' {
			return Invalidf(field, "got %s, expected lowercase (%s): agent ids are matched exactly, so capitals are refused rather than made a second agent", quote(v), quote(strings.ToLower(v)))
		}
		r, _ := utf8.DecodeRuneInString(v[i:])
		what := fmt.Sprintf("%q (U+%04X)", r, r)
		if r == utf8.RuneError {
			what = fmt.Sprintf("byte 0x%02x", b)
		}
		return Invalidf(field, "got %s, whose character %s at byte %d is not allowed; expected %s, such as planner@local", quote(v), what, i, AgentIDAlphabet)
	}
	return nil
}

// ValidatePrincipal checks whom a token speaks for: an agent id or an
// operator's name ("Alice Ops" is not allowed, "alice" or "Alice" is). It
// is looser than ValidateAgentID because tokens come from the operator's
// own configuration, which must keep starting the daemon it started before;
// a principal that is not a valid agent id simply cannot act as an agent.
func ValidatePrincipal(field, v string) error {
	switch {
	case v == "":
		return Invalidf(field, "got \"\", expected a principal such as planner@local or an operator name")
	case len(v) > 256:
		return Invalidf(field, "got %d bytes, expected a principal of at most 256 bytes", len(v))
	case !utf8.ValidString(v):
		return Invalidf(field, "got invalid UTF-8, expected a principal such as planner@local")
	}
	for _, r := range v {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return Invalidf(field, "got %s, expected a principal without spaces or control characters, such as planner@local", quote(v))
		}
	}
	return nil
}

func agentIDByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("._~@:/+-", b) >= 0
}

func nonBlank(field, v, what string) error {
	if strings.TrimSpace(v) == "" {
		return Invalidf(field, "got %s, expected %s", quote(v), what)
	}
	if !utf8.ValidString(v) {
		return Invalidf(field, "got invalid UTF-8, expected %s", what)
	}
	return nil
}

// NormalizeTask validates a task as sent by a client and returns it with its
// ids in canonical form. The id must already be set (the daemon assigns one
// when the client does not).
func NormalizeTask(t Task) (Task, error) {
	var err error
	if t.ID, err = CanonicalUUID("id", t.ID); err != nil {
		return t, err
	}
	if err := ValidateAgentID("sender", t.Sender); err != nil {
		return t, err
	}
	if err := ValidateAgentID("recipient", t.Recipient); err != nil {
		return t, err
	}
	if err := nonBlank("intent_text", t.IntentText, "a non-empty description of the work"); err != nil {
		return t, err
	}
	if t.TaskKind != nil {
		k := *t.TaskKind
		if err := nonBlank("task_kind", k, "a non-empty kind such as \"summarize\", or no task_kind at all"); err != nil {
			return t, err
		}
		if len(k) > MaxKindBytes {
			return t, Invalidf("task_kind", "got %d bytes, expected at most %d", len(k), MaxKindBytes)
		}
	}
	if t.Parent != "" {
		if t.Parent, err = CanonicalUUID("parent", t.Parent); err != nil {
			return t, err
		}
		if t.Parent == t.ID {
			return t, Invalidf("parent", "got %s, the task's own id; expected the id of another task", quote(t.Parent))
		}
	}
	if t.DeadlineMs != nil && (*t.DeadlineMs <= 0 || *t.DeadlineMs > MaxTimestampMs) {
		return t, Invalidf("deadline_ms", "got %d, expected absolute unix milliseconds from 1 to %d (year 9999)", *t.DeadlineMs, MaxTimestampMs)
	}
	if t.Idempotency != nil {
		switch t.Idempotency.DuplicateSafety {
		case DuplicateUnsafe, DuplicateIdempotent:
		default:
			return t, Invalidf("idempotency.duplicate_safety", "got %s, expected \"unsafe\" or \"idempotent\"", quote(t.Idempotency.DuplicateSafety))
		}
		if err := nonBlank("idempotency.key", t.Idempotency.Key, "a non-empty key when idempotency is given"); err != nil {
			return t, err
		}
		if len(t.Idempotency.Key) > MaxKeyBytes {
			return t, Invalidf("idempotency.key", "got %d bytes, expected at most %d", len(t.Idempotency.Key), MaxKeyBytes)
		}
	}
	if t.Context != nil {
		c, err := normalizeContext(t.Context)
		if err != nil {
			return t, err
		}
		t.Context = c
	}
	if t.A2A != nil {
		a := *t.A2A // the caller's origin stays as it was
		if err := normalizeA2A(&a); err != nil {
			return t, err
		}
		t.A2A = &a
	}
	if t.Covenant != nil {
		if err := normalizeCovenant(t.Covenant); err != nil {
			return t, err
		}
	}
	if t.Turns != nil {
		return t, Invalidf("turns", "set only by the daemon (a task's conversation grows by its worker's questions and its sender's replies, POST /a2a/tasks/{id}/reply); omit the field")
	}
	return t, nil
}

// normalizeContext checks a task's context: a JSON object, bounded like a
// result's json content. A null is no context.
func normalizeContext(c json.RawMessage) (json.RawMessage, error) {
	t := strings.TrimSpace(string(c))
	if t == "null" {
		return nil, nil
	}
	if !json.Valid(c) {
		return nil, Invalidf("context", "not valid JSON, expected a JSON object")
	}
	if t == "" || t[0] != '{' {
		return nil, Invalidf("context", "got %s, expected a JSON object such as {\"repo\":\"mailroom\"} (or no context at all)", jsonKind(t))
	}
	if err := strictjson.CheckValue(c, "context", MaxValueDepth); err != nil {
		e, _ := err.(*strictjson.Error)
		return nil, Invalid(e.Path, e.Error())
	}
	return c, nil
}

// jsonKind names the kind of a JSON value for a refusal.
func jsonKind(v string) string {
	switch {
	case v == "":
		return "nothing"
	case v[0] == '[':
		return "an array"
	case v[0] == '"':
		return "a string"
	case v == "true" || v == "false":
		return "a boolean"
	}
	return "a number"
}

// NormalizeResult validates a posted result and returns it with canonical ids.
func NormalizeResult(r Result) (Result, error) {
	var err error
	if r.TaskID, err = CanonicalUUID("task_id", r.TaskID); err != nil {
		return r, err
	}
	switch r.Status {
	case StatusOK, StatusError, StatusPartial, StatusRejected, StatusInputRequired, StatusAuthRequired:
	default:
		return r, Invalidf("status", "got %s, expected \"ok\", \"error\", \"partial\", \"rejected\", or \"input_required\" or \"auth_required\" to ask the sender", quote(r.Status))
	}
	if r.Content, err = normalizeContent(r.Content); err != nil {
		return r, err
	}
	if Asks(r.Status) && len(r.Content) == 0 {
		return r, Invalidf("content", "got no parts, expected the question for the sender with status %s, such as [{\"type\":\"text\",\"text\":\"which database?\"}]", quote(r.Status))
	}
	if !utf8.ValidString(r.ErrorMessage) {
		return r, Invalidf("error_message", "got invalid UTF-8, expected text")
	}
	if r.LeaseID != "" {
		if r.LeaseID, err = CanonicalUUID("lease_id", r.LeaseID); err != nil {
			return r, err
		}
	}
	return r, nil
}

// checkContent checks one content part.
func checkContent(field string, c Content) error {
	switch c.Type {
	case ContentText:
		if len(c.Value) != 0 {
			return Invalidf(field+".value", "a text part carries \"text\", not \"value\"")
		}
		return validUTF8(field+".text", c.Text)
	case ContentJSON:
		if len(c.Value) == 0 {
			return Invalidf(field+".value", "missing, expected a JSON value for a part of type \"json\"")
		}
		if c.Text != "" {
			return Invalidf(field+".text", "a json part carries \"value\", not \"text\"")
		}
		if !json.Valid(c.Value) {
			return Invalidf(field+".value", "not valid JSON")
		}
		if err := strictjson.CheckValue(c.Value, field+".value", MaxValueDepth); err != nil {
			e, _ := err.(*strictjson.Error)
			return Invalid(e.Path, e.Error())
		}
		return nil
	}
	return Invalidf(field+".type", "got %s, expected \"text\" or \"json\"", quote(c.Type))
}

// NormalizeRepair validates a repair request and returns it with canonical ids.
func NormalizeRepair(req RepairRequest) (RepairRequest, error) {
	var err error
	if req.TaskID, err = CanonicalUUID("task_id", req.TaskID); err != nil {
		return req, err
	}
	if err := nonBlank("reason", req.Reason, "a non-empty reason saying why this repair is made"); err != nil {
		return req, err
	}
	if len(req.Reason) > MaxReasonBytes {
		return req, Invalidf("reason", "got %d bytes, expected at most %d", len(req.Reason), MaxReasonBytes)
	}
	c := &req.Command
	if c.LeaseID != "" {
		if c.LeaseID, err = CanonicalUUID("command.lease_id", c.LeaseID); err != nil {
			return req, err
		}
	}
	if c.QueuedFor != "" {
		if err := ValidateAgentID("command.queued_for", c.QueuedFor); err != nil {
			return req, err
		}
	}
	if c.Action == ActionHandOver {
		return req, normalizeHandOver(c)
	}
	if c.Sender != "" || c.SentBy != "" {
		f := "command.sender"
		if c.Sender == "" {
			f = "command.sent_by"
		}
		return req, Invalidf(f, "not allowed with action %s (only hand_over hands a task to another sender)", quote(c.Action))
	}
	switch c.Action {
	case ActionMove, ActionCancel:
		return req, normalizeQueuedRepair(c)
	}
	if c.QueuedFor != "" {
		return req, Invalidf("command.queued_for", "not allowed with action %s (it guards a move or cancel of a queued task; a lease is guarded by command.lease_id)", quote(c.Action))
	}
	switch c.Action {
	case ActionRequeue:
		switch c.DuplicateRisk {
		case RiskIdempotent, RiskOperatorAccepted:
		default:
			return req, Invalidf("command.duplicate_risk", "got %s, expected \"idempotent\" or \"operator_accepted\" (a requeue must state its duplicate-work posture)", quote(c.DuplicateRisk))
		}
		if c.Message != "" {
			return req, Invalidf("command.message", "not allowed with action \"requeue\" (only force_error posts a message)")
		}
		if c.Recipient != "" {
			if err := ValidateAgentID("command.recipient", c.Recipient); err != nil {
				return req, err
			}
		}
		if c.NewAgent && c.Recipient == "" {
			return req, Invalidf("command.new_agent", "only with command.recipient (it confirms a move to an agent the mailbox does not know yet)")
		}
	case ActionForceError:
		if err := nonBlank("command.message", c.Message, "a non-empty error message for the sender"); err != nil {
			return req, err
		}
		if c.DuplicateRisk != "" {
			return req, Invalidf("command.duplicate_risk", "not allowed with action \"force_error\" (only requeue states a posture)")
		}
		if c.Recipient != "" || c.NewAgent {
			return req, Invalidf("command.recipient", "not allowed with action \"force_error\" (only a requeue hands a task to another recipient)")
		}
	default:
		return req, Invalidf("command.action", "got %s, expected \"requeue\" or \"force_error\" (for a lease), \"move\" or \"cancel\" (for a queued task), or \"hand_over\" (for a task waiting on its sender)", quote(c.Action))
	}
	return req, nil
}

// normalizeQueuedRepair checks a move's or cancel's command: a queued task
// has no lease and no work started, so no lease guard and no posture.
func normalizeQueuedRepair(c *RepairCommand) error {
	if c.LeaseID != "" {
		return Invalidf("command.lease_id", "not allowed with action %s (a queued task has no lease; guard it with command.queued_for, the agent you saw it queued for)", quote(c.Action))
	}
	if c.DuplicateRisk != "" {
		return Invalidf("command.duplicate_risk", "not allowed with action %s (no worker holds a queued task, so nothing can run twice)", quote(c.Action))
	}
	if c.Action == ActionCancel {
		if c.Recipient != "" || c.NewAgent {
			return Invalidf("command.recipient", "not allowed with action \"cancel\" (a move hands a queued task to another recipient)")
		}
		if c.Message != "" {
			return nonBlank("command.message", c.Message, "the error message for the sender, or no field for one naming the reason")
		}
		return nil
	}
	if c.Message != "" {
		return Invalidf("command.message", "not allowed with action \"move\" (only force_error and cancel post a message)")
	}
	if c.Recipient == "" {
		return Invalidf("command.recipient", "missing, expected the agent id of the task's new recipient (a move hands a queued task to another agent)")
	}
	return ValidateAgentID("command.recipient", c.Recipient)
}

// ValidateLimit checks a list limit: 0 means the default.
func ValidateLimit(field string, n int) (int, error) {
	switch {
	case n == 0:
		return DefaultLimit, nil
	case n < 0 || n > MaxLimit:
		return 0, Invalidf(field, "got %d, expected a number from 1 to %d", n, MaxLimit)
	}
	return n, nil
}

package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mailroom/mailroom/mailbox"
)

// The request-body decoders are fuzzed through the real handlers (content
// type check, body limit, UTF-8 check, strict JSON decoding, error mapping)
// in front of a service that normalizes what reaches it, as the engine
// does (the handlers no longer normalize: the service is the one place),
// and records what it accepted.
// Properties, for any body and Content-Type:
//   - nothing panics and nothing is answered 500: every refusal is a
//     *mailbox.Error, answered 400 invalid or 413 too_large with a
//     non-empty UTF-8 message, and the service accepted nothing;
//   - whatever the service accepted is normalized (Normalize* leaves it
//     unchanged) and, sent again as the client library would send it, is
//     accepted as the very same value.
//
//	go test -run '^$' -fuzz FuzzDecodeTask ./daemon/httpapi

func FuzzDecodeTask(f *testing.F) {
	for _, s := range []string{
		`{"sender":"a@x","recipient":"b@x","intent_text":"do"}`,
		`{"id":"6F9619FF-8B86-4D11-B42D-00C04FC964FF","sender":"a@x","recipient":"b@x","intent_text":"do","task_kind":"k",` +
			`"parent":"0b7a5c1e-3d2f-4a6b-9c8d-7e6f5a4b3c2d","deadline_ms":1800000000000,"idempotency":{"duplicate_safety":"idempotent","key":"k"}}`,
		`{"sender":"a@x","recipient":"b@x","intent_text":"\ud800 lone surrogate"}`,
		`{"sender":"a@x","recipient":"b@x","intent_text":"do","deadline_ms":1e3}`,
		`{"sender":"a@x","recipient":"b@x","intent_text":"do","task_kind":null,"idempotency":null}`,
		`{"Sender":"a@x","RECIPIENT":"b@x","intent_text":"case-folded keys"}`,
		`{"sender":"a@x","recipient":"b@x","intent_text":"do"} {}`,
		`{"sender":"a@x","recipient":"b@x","intent_text":"d` + "\xff" + `o"}`,
		`{"sender":"a@x","recipient":"b@x","intent_text":"do","colour":"red"}`,
		`[1,2]`, `null`, `"task"`, ``, `{`,
	} {
		f.Add("application/json", []byte(s))
	}
	f.Add("application/json; charset=UTF-8", []byte(`{"sender":"a@x","recipient":"b@x","intent_text":"do"}`))
	f.Add("text/plain", []byte(`{}`))
	f.Add("", []byte(`{"sender":"a@x","recipient":"b@x","intent_text":"`+strings.Repeat("x", mailbox.MaxBodyBytes)+`"}`))
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		fuzzRoute(t, "/a2a/tasks", ctype, body, func(s *recorder) any { return s.task }, func(v any) (any, error) {
			return mailbox.NormalizeTask(*v.(*mailbox.Task))
		})
	})
}

func FuzzDecodeResult(f *testing.F) {
	const id = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	for _, s := range []string{
		`{"task_id":"` + id + `","status":"ok","content":[]}`,
		`{"task_id":"` + id + `","status":"partial","content":[{"type":"text","text":""},{"type":"json","value":{"a" : [1, 2.50, null]}}],` +
			`"error_message":"half","lease_id":"0B7A5C1E-3D2F-4A6B-9C8D-7E6F5A4B3C2D"}`,
		`{"task_id":"` + id + `","status":"ok","content":[{"type":"json","value":null}]}`,
		`{"task_id":"` + id + `","status":"ok"}`,
		`{"task_id":"` + id + `","status":"ok","content":null}`,
		`{"task_id":"` + id + `","status":"ok","content":[{"type":"json"}]}`,
		`{"task_id":"` + id + `","status":"ok","content":[{"type":"text","value":1}]}`,
		`{"task_id":"` + id + `","status":"ok","content":[{"type":"image","text":"a"}]}`,
		`{"task_id":"` + id + `","status":"ok","content":[{"type":"text","text":"a","lang":"en"}]}`,
		`{"task_id":"` + id + `","status":"done","content":[]}`,
		`{"task_id":"t","status":"ok","content":"hi"}`,
	} {
		f.Add("application/json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		fuzzRoute(t, "/a2a/results", ctype, body, func(s *recorder) any { return s.result }, func(v any) (any, error) {
			return mailbox.NormalizeResult(*v.(*mailbox.Result))
		})
	})
}

func FuzzDecodeRepair(f *testing.F) {
	const id = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	for _, s := range []string{
		`{"task_id":"` + id + `","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted"}}`,
		`{"task_id":"` + id + `","reason":"r","command":{"action":"requeue","duplicate_risk":"idempotent","lease_id":"0B7A5C1E-3D2F-4A6B-9C8D-7E6F5A4B3C2D"}}`,
		`{"task_id":"` + id + `","reason":"r","command":{"action":"force_error","message":"gone"}}`,
		`{"task_id":"` + id + `","reason":" ","command":{"action":"force_error","message":"gone"}}`,
		`{"task_id":"` + id + `","reason":"r","command":{"action":"retry"}}`,
		`{"task_id":"` + id + `","reason":"r","command":{"action":"requeue","duplicate_risk":"operator_accepted","message":"m"}}`,
		`{"task_id":"` + id + `","reason":"r","command":null}`,
		`{"task_id":"` + id + `","reason":"r"}`,
	} {
		f.Add("application/json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, ctype string, body []byte) {
		fuzzRoute(t, "/a2a/repair", ctype, body, func(s *recorder) any { return s.repair }, func(v any) (any, error) {
			return mailbox.NormalizeRepair(*v.(*mailbox.RepairRequest))
		})
	})
}

// recorder is a mailbox.Service that normalizes what a write route hands
// it, as the engine does, refusing what does not normalize and keeping the
// last value it accepted. Other methods are not reached by these routes
// (the embedded nil interface would panic if they were).
type recorder struct {
	mailbox.Service
	task   *mailbox.Task
	result *mailbox.Result
	repair *mailbox.RepairRequest
}

func (s *recorder) Send(_ context.Context, t mailbox.Task) (mailbox.TaskQueuedResponse, error) {
	if t.ID == "" {
		t.ID = "6f9619ff-8b86-4d11-b42d-00c04fc964ff" // the engine assigns one
	}
	n, err := mailbox.NormalizeTask(t)
	if err != nil {
		return mailbox.TaskQueuedResponse{}, err
	}
	s.task = &n
	return mailbox.TaskQueuedResponse{TaskID: n.ID}, nil
}

func (s *recorder) PostResult(_ context.Context, r mailbox.Result) error {
	n, err := mailbox.NormalizeResult(r)
	if err != nil {
		return err
	}
	s.result = &n
	return nil
}

func (s *recorder) Repair(_ context.Context, req mailbox.RepairRequest) (mailbox.RepairOutcome, error) {
	n, err := mailbox.NormalizeRepair(req)
	if err != nil {
		return mailbox.RepairOutcome{}, err
	}
	s.repair = &n
	return mailbox.RepairOutcome{TaskID: n.TaskID}, nil
}

// post sends body to path through a fresh API over a fresh recorder.
func post(path, ctype string, body []byte) (*httptest.ResponseRecorder, *recorder) {
	svc := &recorder{}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	w := httptest.NewRecorder()
	New(svc, Options{}).ServeHTTP(w, req)
	return w, svc
}

// fuzzRoute checks the properties above for one request. got returns what
// reached the service (a typed nil pointer when nothing did); normalize
// runs the route's Normalize* on it.
func fuzzRoute(t *testing.T, path, ctype string, body []byte, got func(*recorder) any, normalize func(any) (any, error)) {
	w, svc := post(path, ctype, body)
	v := got(svc)
	reached := !reflect.ValueOf(v).IsNil()
	if w.Code != http.StatusOK {
		var e mailbox.ErrorResponse
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("POST %s answered %d with a body that is not the error shape: %q", path, w.Code, w.Body)
		}
		want := map[string]int{mailbox.CodeInvalid: http.StatusBadRequest, mailbox.CodeTooLarge: http.StatusRequestEntityTooLarge}[e.Code]
		if want == 0 || w.Code != want {
			t.Fatalf("POST %s (Content-Type %q) body %q answered %d %q: %s; want 400 invalid or 413 too_large", path, ctype, body, w.Code, e.Code, e.Message)
		}
		if strings.TrimSpace(e.Message) == "" || !utf8.ValidString(e.Message) {
			t.Fatalf("POST %s body %q refused with message %q; want a non-empty UTF-8 message", path, body, e.Message)
		}
		if reached {
			t.Fatalf("POST %s body %q refused with %d, but the service was called with %+v", path, body, w.Code, v)
		}
		return
	}
	if !reached {
		t.Fatalf("POST %s body %q answered 200 without reaching the service", path, body)
	}
	// Normalize leaves it unchanged: the service only ever sees canonical values.
	n, err := normalize(v)
	if err != nil {
		t.Fatalf("POST %s accepted %q, but the value it passed on fails normalization: %v", path, body, err)
	}
	if !reflect.DeepEqual(reflect.ValueOf(v).Elem().Interface(), n) {
		t.Fatalf("POST %s accepted %q and passed on %+v, which normalizes to %+v", path, body, v, n)
	}
	// Sent again as our client sends it, it is accepted as the same value.
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("POST %s accepted %q, but the value does not encode: %v", path, body, err)
	}
	w2, svc2 := post(path, "application/json", again)
	if w2.Code != http.StatusOK {
		t.Fatalf("POST %s accepted %q but refused its own re-encoding %s: %d %s", path, body, again, w2.Code, w2.Body)
	}
	if again2, _ := json.Marshal(got(svc2)); !bytes.Equal(again, again2) {
		t.Fatalf("POST %s: %s was accepted as %s", path, again, again2)
	}
}

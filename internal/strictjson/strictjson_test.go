package strictjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	LeaseID string `json:"lease_id,omitempty" empty:"expected a UUID; omit the field for no guard"`
	Action  string `json:"action"`
	Slots   int    `json:"slots,omitempty" zero:"expected 1 to 64; omit the field for the default, 4"`
}

type embedded struct {
	Note string `json:"note,omitempty"`
}

type body struct {
	embedded
	ID      string            `json:"id,omitempty" empty:"expected a UUID; omit the field to let the daemon assign one"`
	Sender  string            `json:"sender"`
	Count   *int64            `json:"count,omitempty"`
	Command inner             `json:"command"`
	Parts   []part            `json:"parts"`
	Meta    map[string]string `json:"meta,omitempty"`
}

type part struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

func nest(n int, leaf string) string {
	return strings.Repeat("[", n) + leaf + strings.Repeat("]", n)
}

func TestCheck(t *testing.T) {
	typ := reflect.TypeFor[body]()
	cases := []struct {
		name, in string
		path     string // "" means accepted
		msg      string
	}{
		{"plain", `{"id":"x","sender":"a","command":{"action":"requeue"},"parts":[{"type":"json","value":{"a":[1,2,{"b":null}]}}]}`, "", ""},
		{"embedded field", `{"note":"n","sender":"a"}`, "", ""},
		{"escaped key is the field", `{"send\u0065r":"a"}`, "", ""},
		{"duplicate key", `{"sender":"a","sender":"b"}`, "sender", "given twice"},
		{"duplicate written with an escape", `{"sender":"a","s\u0065nder":"b"}`, "sender", "given twice"},
		{"duplicate nested", `{"command":{"lease_id":"1","action":"x","lease_id":"2"}}`, "command.lease_id", "given twice"},
		{"duplicate inside a free-form value", `{"parts":[{"type":"json","value":{"a":1,"b":2,"a":3}}]}`, "parts[0].value.a", "given twice"},
		{"duplicate among many free-form keys", `{"meta":{"k0":"","k1":"","k2":"","k3":"","k4":"","k5":"","k6":"","k7":"","k8":"","k9":"","k10":"","k11":"","k12":"","k13":"","k14":"","k15":"","k16":"","k17":"","k3":""}}`, "meta.k3", "given twice"},
		{"many distinct free-form keys", `{"meta":{"k0":"","k1":"","k2":"","k3":"","k4":"","k5":"","k6":"","k7":"","k8":"","k9":"","k10":"","k11":"","k12":"","k13":"","k14":"","k15":"","k16":"","k17":""}}`, "", ""},
		{"other letter case", `{"Sender":"a"}`, "Sender", `did you mean "sender"`},
		{"other letter case nested", `{"command":{"Lease_ID":"1"}}`, "command.Lease_ID", `did you mean "lease_id"`},
		{"kelvin sign folds like encoding/json", "{\"command\":{\"action\":\"x\",\"lease_id\":\"1\"},\"sender\":\"a\",\"parts\":[],\"\u212aey\":1}", "", ""},
		{"unknown key is the decoder's", `{"bogus":{"a":1}}`, "", ""},
		{"empty optional id", `{"id":""}`, "id", `got "", expected a UUID`},
		{"empty optional id nested", `{"command":{"lease_id":  ""}}`, "command.lease_id", "omit the field"},
		{"empty plain string is fine", `{"sender":""}`, "", ""},
		{"explicit zero where absent is a default", `{"command":{"slots":0}}`, "command.slots", "got 0, expected 1 to 64; omit the field for the default, 4"},
		{"explicit zero spelled otherwise", `{"command":{"slots": -0.0e1}}`, "command.slots", "got 0"},
		{"a number other than zero", `{"command":{"slots":4}}`, "", ""},
		{"a zero-tagged field absent", `{"command":{"action":"x"}}`, "", ""},
		{"value at the depth limit", `{"parts":[{"type":"json","value":` + nest(8, "1") + `}]}`, "", ""},
		{"value over the depth limit", `{"parts":[{"type":"json","value":` + nest(9, "1") + `}]}`, "parts[0].value", "at most 8"},
		{"objects count as levels", `{"parts":[{"type":"json","value":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}}}]}`, "parts[0].value", "at most 8"},
		{"lone high surrogate", `{"parts":[{"type":"json","value":"a\ud800b"}]}`, "parts[0].value", `contains \ud800, half of a UTF-16 surrogate pair`},
		{"lone low surrogate", `{"sender":"\uDC00"}`, "sender", `contains \uDC00`},
		{"high surrogate then no low", `{"sender":"\ud83d\u0041"}`, "sender", `contains \ud83d`},
		{"high surrogate at the end", `{"sender":"\ud83d"}`, "sender", `contains \ud83d`},
		{"surrogate in a key", `{"meta":{"\udfff":"x"}}`, "meta", `contains \udfff`},
		{"whole surrogate pair", `{"sender":"\ud83d\ude00","meta":{"\ud83d\ude00":"\uD83D\uDE00"}}`, "", ""},
		{"escaped backslash before ud800 text", `{"sender":"\\ud800"}`, "", ""},
		{"typed nesting does not count", `{"parts":[{"type":"json","value":1}],"command":{"action":"x"}}`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in), typ, 8)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok || IsSyntax(err) {
				t.Fatalf("got %v, want a refusal at %s", err, tc.path)
			}
			if e.Path != tc.path || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got path %q msg %q, want path %q and %q", e.Path, e.Msg, tc.path, tc.msg)
			}
		})
	}
}

func TestCheckSyntax(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a"`, `{"a":}`, `[1,]`, `{"a":1,}`, `"abc`, `{"a":1}x`, `{"a" 1}`, `[1 2]`, `{1:2}`, `tru"e`} {
		if err := Check([]byte(in), nil, 8); !IsSyntax(err) {
			t.Errorf("%q: got %v, want a syntax error", in, err)
		}
	}
}

func TestCheckValue(t *testing.T) {
	if err := CheckValue([]byte(nest(4, `{"a":1}`)), "content[2].value", 5); err != nil {
		t.Fatal(err)
	}
	err := CheckValue([]byte(nest(5, `{"a":1}`)), "content[2].value", 5)
	if e, ok := err.(*Error); !ok || e.Path != "content[2].value" {
		t.Fatalf("got %v, want a refusal naming content[2].value", err)
	}
	if err := CheckValue([]byte(`{"a":1,"a":2}`), "v", 5); err == nil || err.Error() != "v.a: given twice in one object; each key may appear once" {
		t.Fatalf("got %v", err)
	}
}

func BenchmarkCheck(b *testing.B) {
	typ := reflect.TypeFor[body]()
	in := []byte(`{"id":"x","sender":"a","command":{"lease_id":"l","action":"requeue"},"parts":[{"type":"json","value":{"a":[1,2,{"b":null}]}}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(in, typ, 8); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzCheck: no input makes Check panic, and on valid JSON it refuses only
// what it promises to refuse. (On invalid JSON it may pass: the decoder that
// runs next refuses it with a position.)
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[[[]]]`, `{"sender":"a","Sender":"b"}`, `{"id":""}`, `{"a":{"b":[1,{"c":"\"x\\"}]}}`, `"s"`, `1e5`, `{"a":1,"a":1}`} {
		f.Add([]byte(s))
	}
	typ := reflect.TypeFor[body]()
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Check(data, typ, 8)
		err := Check(data, nil, 1<<20)
		valid := json.Valid(data)
		if IsSyntax(err) && valid {
			t.Fatalf("valid JSON %q called a syntax error", data)
		}
		if err != nil && !IsSyntax(err) && !strings.Contains(err.Error(), "given twice") && !strings.Contains(err.Error(), "nested more than") && !strings.Contains(err.Error(), "surrogate pair") {
			t.Fatalf("free-form check refused %q for something else: %v", data, err)
		}
	})
}

// A Deferred value is walked for its syntax only: its keys, depth and
// fields are checked later, on their own; around it every rule holds.
func TestDeferredIsSyntaxOnly(t *testing.T) {
	type envelope struct {
		Items []Deferred `json:"items"`
	}
	typ := reflect.TypeFor[envelope]()
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	for _, ok := range []string{
		`{"items":[{"a":1,"a":2}]}`,
		`{"items":[` + deep + `,{"Sender":"x","id":""}]}`,
		`{"items":[null,5,"s"]}`,
	} {
		if err := Check([]byte(ok), typ, 32); err != nil {
			t.Errorf("%s: %v, want it passed to be checked item by item", ok, err)
		}
		var e envelope
		if err := json.Unmarshal([]byte(ok), &e); err != nil || len(e.Items) == 0 {
			t.Errorf("%s decodes to %v: %v", ok, e, err)
		}
	}
	for _, bad := range []struct{ body, want string }{
		{`{"items":[{"a":1,}]}`, "invalid JSON"},
		{`{"items":[],"items":[]}`, "items: given twice"},
		{`{"Items":[]}`, `did you mean "items"`},
	} {
		err := Check([]byte(bad.body), typ, 32)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.body, err, bad.want)
		}
	}
	var d Deferred
	if err := json.Unmarshal([]byte(` {"k": [1]} `), &d); err != nil || string(d) != `{"k": [1]}` {
		t.Fatalf("Deferred decoded %q, %v; want the value's own bytes", d, err)
	}
}

package covenant_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// No body sent to the dialect's write routes gets a 5xx or an answer that
// is not one JSON object with a kind: whatever a client sends is either
// done or refused in Covenant's shape. The seeds run with every go test.
func FuzzWriteRoutes(f *testing.F) {
	for _, s := range []string{
		covenantTask("a2a5eede-0000-4000-8000-0000000000f1", "x"),
		`{"id":"a2a5eede-0000-4000-8000-0000000000f2","sender":null,"recipient":{},"intent_text":"x"}`,
		`{"id":"a2a5eede-0000-4000-8000-0000000000f3","sender":{"display":"a@b","pubkey":"` + alicePK + `"},"recipient":{"display":"c@d","pubkey":"` + bobPK + `"},"intent_text":"x","idempotency":null,"deadline_ms":1e300}`,
		`{"task_id":"a2a5eede-0000-4000-8000-0000000000f1","status":"ok","content":[{"type":"json","value":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]}`,
		`{"task_id":"a2a5eede-0000-4000-8000-0000000000f1","command":null,"reason":"x"}`,
		`{"task_id":"a2a5eede-0000-4000-8000-0000000000f1","command":{"action":"force_error","lease_id":null,"message":"m"},"reason":"r"}`,
		`null`, `[]`, `"x"`, `{}`, `{"id":1}`, "\xff", `{"sender":{"display":"a\u0000@b","pubkey":"1"}}`,
	} {
		f.Add(s)
	}
	d := daemontest.Start(f, daemontest.Options{})
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/a2a/tasks", "/a2a/results", "/a2a/repair"} {
			resp, err := http.Post(d.URL()+"/compat/covenant"+path, "application/json", bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var out struct {
				Kind string `json:"kind"`
			}
			if resp.StatusCode >= 500 || json.Unmarshal(b, &out) != nil || out.Kind == "" {
				t.Fatalf("POST %s %q = %d %s", path, body, resp.StatusCode, b)
			}
		}
	})
}

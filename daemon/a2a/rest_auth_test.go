package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// An HTTP+JSON refusal of a token carries the ErrorInfo reason the v1.0
// SDKs give it, so a2a-go v2 reads its typed error: a missing or unknown
// token is 401 UNAUTHENTICATED, a missing right 403 UNAUTHORIZED; neither
// changes anything.
func TestRESTAuthRefusalReasons(t *testing.T) {
	it := newInterop(t, daemontest.Options{Tokens: edgeTokens})
	base := it.register("coder@local")
	send := `{"message":{"role":"ROLE_USER","messageId":"auth-1","parts":[{"text":"hi"}]}}`
	before := it.seq()
	for _, tc := range []struct {
		name, token string
		status      int
		grpc        string
		reason      string
	}{
		{"no token", "", 401, "UNAUTHENTICATED", "UNAUTHENTICATED"},
		{"an unknown token", "tok-nobody", 401, "UNAUTHENTICATED", "UNAUTHENTICATED"},
		{"a token without a2a.send.coder@local", "tok-eve", 403, "PERMISSION_DENIED", "UNAUTHORIZED"},
	} {
		h := map[string]string{"A2A-Version": "1.0"}
		if tc.token != "" {
			h["Authorization"] = "Bearer " + tc.token
		}
		r := post(t, base+"message:send", h, send)
		var rep struct {
			Error struct {
				Status  string
				Details []struct{ Reason string }
			}
		}
		if err := json.Unmarshal(r.body, &rep); err != nil || r.status != tc.status || rep.Error.Status != tc.grpc ||
			len(rep.Error.Details) != 1 || rep.Error.Details[0].Reason != tc.reason {
			t.Errorf("%s: %d %s; want %d %s with reason %s", tc.name, r.status, r.body, tc.status, tc.grpc, tc.reason)
		}
	}
	if after := it.seq(); after != before {
		t.Errorf("refused sends changed the mailbox: seq %d -> %d", before, after)
	}
}

package covenant_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
)

// The dialect's result route ends a lease like the native one: only the
// lease's holder may post its result. Covenant's client posts results
// without a lease guard, so the holder check is all that stands between
// two workers with the same rights.
func TestOnlyTheLeaseHolderPostsThroughTheDialect(t *testing.T) {
	aliceTok, aliceSecret := tokenFor(t, "alice@local", "a2a.send.*", auth.CapDrain)
	bobTok, bobSecret := tokenFor(t, "bob@local", auth.CapRecv, "a2a.respond.*")
	carolTok, carolSecret := tokenFor(t, "carol@local", auth.CapRecv, "a2a.respond.*")
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{aliceTok, bobTok, carolTok}})
	alice, bob, carol := newPeer(t, d, aliceSecret), newPeer(t, d, bobSecret), newPeer(t, d, carolSecret)

	const id = "a2a5eede-0000-4000-8000-0000000071d5"
	call[cvTaskQueued](alice, "POST", "/a2a/tasks", covenantTask(id, "fetch papers"), "a2_a_task_queued")
	if got := call[cvTaskOpt](bob, "GET", "/a2a/tasks/next", "", "a2_a_task_opt"); got.Task == nil || got.Task.ID != id {
		t.Fatalf("bob leased %+v", got.Task)
	}
	status, _, b := carol.do("POST", "/a2a/results", `{"task_id":"`+id+`","status":"ok","content":[{"type":"text","text":"forged"}]}`)
	e := strict[cvError](t, b)
	if status != http.StatusOK || e.Kind != "error" || !strings.Contains(e.Message, "only the lease's holder") {
		t.Fatalf("carol's result for bob's lease = %d %s; want Covenant's refusal", status, b)
	}
	if got := call[cvResultOpt](alice, "GET", "/a2a/results/next", "", "a2_a_result_opt"); got.Result != nil {
		t.Fatalf("alice drained %+v after the forgery", got.Result)
	}
	call[cvResultPosted](bob, "POST", "/a2a/results", `{"task_id":"`+id+`","status":"ok","content":[{"type":"text","text":"3 papers"}]}`, "a2_a_result_posted")
	if got := call[cvResultOpt](alice, "GET", "/a2a/results/next", "", "a2_a_result_opt"); got.Result == nil || *got.Result.Content[0].Text != "3 papers" {
		t.Fatalf("alice drained %+v; want bob's result", got.Result)
	}
}

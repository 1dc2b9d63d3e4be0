package a2a_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// Deleting a push config twice succeeds twice in every binding (A2A 1.0:
// a delete of a config that is not there succeeds), and the second writes
// nothing to the log; a delete on a task that is not there, or that the
// caller may not see through this agent, stays TaskNotFound. The configs
// left survive a restart (replay) as they were.
func TestPushConfigDeleteIsIdempotent(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	other := it.register("other@local")
	id := sendV03(t, base, "pd-1", "fix the flaky test")
	otherID := sendV03(t, other, "pd-2", "review it")
	const unknown = "6f9619ff-8b86-4d11-b42d-00c04fc964ff"
	v1 := map[string]string{"A2A-Version": "1.0"}

	set := func(cid string) {
		t.Helper()
		r := post(t, base+"tasks/"+id+"/pushNotificationConfigs", v1, `{"id":"`+cid+`","url":"http://127.0.0.1:9/`+cid+`"}`)
		if r.status != 200 {
			t.Fatalf("setting config %s: %d %s", cid, r.status, r.body)
		}
	}
	rpcOK := func(r edgeReply) bool {
		var rep rpcReply
		return r.status == 200 && json.Unmarshal(r.body, &rep) == nil && rep.Error == nil
	}
	rpcCode := func(r edgeReply) int {
		var rep rpcReply
		if json.Unmarshal(r.body, &rep) != nil || rep.Error == nil {
			return 0
		}
		return rep.Error.Code
	}
	type binding struct {
		name string
		// del deletes config cid of task tid through agent base b.
		del      func(b, tid, cid string) edgeReply
		ok       func(edgeReply) bool
		notFound func(edgeReply) bool
	}
	bindings := []binding{
		{"v1.0 JSON-RPC", func(b, tid, cid string) edgeReply {
			return post(t, b, v1, `{"jsonrpc":"2.0","id":1,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"`+tid+`","id":"`+cid+`"}}`)
		}, rpcOK, func(r edgeReply) bool { return rpcCode(r) == -32001 }},
		{"v0.3 JSON-RPC", func(b, tid, cid string) edgeReply {
			return post(t, b, nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+tid+`","pushNotificationConfigId":"`+cid+`"}}`)
		}, rpcOK, func(r edgeReply) bool { return rpcCode(r) == -32001 }},
		{"HTTP+JSON", func(b, tid, cid string) edgeReply {
			return do(t, mustRequest(t, "DELETE", b+"tasks/"+tid+"/pushNotificationConfigs/"+cid), v1)
		}, func(r edgeReply) bool { return r.status == 200 && strings.TrimSpace(string(r.body)) == "{}" },
			func(r edgeReply) bool { return r.status == 404 && strings.Contains(string(r.body), "TASK_NOT_FOUND") }},
	}
	for _, b := range bindings {
		cid := "hook-" + strings.NewReplacer(" ", "-", ".", "", "+", "").Replace(b.name)
		set(cid)
		before := it.seq()
		if r := b.del(base, id, cid); !b.ok(r) {
			t.Fatalf("%s: deleting %s: %d %s", b.name, cid, r.status, r.body)
		}
		deleted := it.seq()
		if deleted != before+1 {
			t.Errorf("%s: the delete moved seq %d -> %d; want one event", b.name, before, deleted)
		}
		for _, again := range []string{cid, "never-set"} {
			if r := b.del(base, id, again); !b.ok(r) {
				t.Errorf("%s: deleting %s, which the task does not have: %d %s; want success", b.name, again, r.status, r.body)
			}
		}
		if after := it.seq(); after != deleted {
			t.Errorf("%s: deleting configs the task does not have wrote to the log: seq %d -> %d", b.name, deleted, after)
		}
		for what, tid := range map[string]string{"an unknown task": unknown, "another agent's task": otherID} {
			if r := b.del(base, tid, cid); !b.notFound(r) {
				t.Errorf("%s: deleting a config of %s: %d %s; want TaskNotFound", b.name, what, r.status, r.body)
			}
		}
		if after := it.seq(); after != deleted {
			t.Errorf("%s: refused deletes wrote to the log: seq %d -> %d", b.name, deleted, after)
		}
	}
	// One config more, kept: after a restart (replay) the task has it
	// alone, and deleting the others again still succeeds.
	set("kept")
	it.d.Restart()
	r := do(t, mustRequest(t, "GET", base+"tasks/"+id+"/pushNotificationConfigs"), v1)
	var list struct {
		Configs []struct{ ID string } `json:"configs"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Configs) != 1 || list.Configs[0].ID != "kept" {
		t.Fatalf("configs after a restart: %d %s; want the kept one alone", r.status, r.body)
	}
	for _, b := range bindings {
		if r := b.del(base, id, "hook-HTTPJSON"); !b.ok(r) {
			t.Errorf("%s: deleting a deleted config after a restart: %d %s; want success", b.name, r.status, r.body)
		}
	}
}

// Command gen writes a golden data dir with today's code: the real engine
// over the real log store, with fixed ids and a fixed clock, so the same
// code writes the same bytes on every run. From the repository root:
//
//	go run ./daemon/store/logstore/testdata/gen -out daemon/store/logstore/testdata/v5/datadir
//
// It refuses a directory that exists: a golden data dir, once checked in,
// is never rewritten (see ../README.md). It lives under testdata so that
// neither `go test ./...` nor any build runs it, and so that the log
// store's own tests do not depend on the engine.
//
// The dir is a snapshot at seq 32 holding tasks in every state (canceled
// and waiting too), a pending result, a cached result, audit records,
// limits, the agent registry and an A2A task with its kept result, then one
// segment whose events cover every event type the log holds, ending with a
// batch of tasks, one of results, tasks sent through Covenant's dialect,
// conversations, remote agents, push notifications, a native sender's
// webhook, a dead agent's queued tasks moved and canceled, and a dead
// sender's question and an undrained result handed to other senders.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mailroom/mailroom/daemon/engine"
	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

// Fixed limits of the golden log: the first phase runs under limitsA, which
// the snapshot records; the second appends limits_set for limitsB, in force
// at the end of the log. The SSE golden test in daemon/httpapi configures
// limitsB so that its daemon appends nothing on start.
var (
	limitsA = mailbox.Limits{RetainDone: 100, ResultCacheMax: 100, ResultCacheAgeMs: 3600000, AuditMax: 50, MaxTurns: 20, MaxTurnsBytes: 1 << 20}
	limitsB = mailbox.Limits{RetainDone: 200, ResultCacheMax: 100, ResultCacheAgeMs: 7200000, AuditMax: 50, MaxTurns: 8, MaxTurnsBytes: 65536}
)

func main() {
	out := flag.String("out", "", "the new directory to write the golden data dir into, such as daemon/store/logstore/testdata/v2/datadir")
	flag.Parse()
	if *out == "" {
		log.Fatal("gen: -out DIR is required")
	}
	if _, err := os.Stat(*out); err == nil {
		log.Fatalf("gen: %s exists: golden data dirs are never rewritten; a format change gets a new testdata/vN beside the old ones", *out)
	}
	tmp, err := os.MkdirTemp("", "mailroom-golden-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	g := &scenario{dir: tmp, clock: &clock{ms: 1735689600000},
		operator: mailbox.WithPrincipal(context.Background(), "oncall")}
	g.run()

	// Only the log's own files: not the LOCK a store leaves behind.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "log-") && !strings.HasPrefix(name, "snapshot-") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("wrote %s (%d bytes)\n", filepath.Join(*out, name), len(data))
	}
}

// clock is the generator's time: 2025-01-01T00:00:00Z, one second later on
// every reading.
type clock struct {
	mu sync.Mutex
	ms int64
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms += 1000
	return time.UnixMilli(c.ms)
}

// scenario drives the engine through the golden scenario.
type scenario struct {
	dir      string
	clock    *clock
	leases   int
	eng      *engine.Engine
	operator context.Context // repairs are made by "oncall"
}

// taskID(1) = 7a5c0000-0000-4000-8000-000000000001.
func taskID(n int) string { return fmt.Sprintf("7a5c0000-0000-4000-8000-%012d", n) }

// newLeaseID makes the engine's lease ids: 1ea5e000-0000-4000-8000-00000000000N.
func (g *scenario) newLeaseID() string {
	g.leases++
	return fmt.Sprintf("1ea5e000-0000-4000-8000-%012d", g.leases)
}

// open starts the engine under limits l; it appends limits_set when they
// differ from the log's.
func (g *scenario) open(l mailbox.Limits) {
	st, err := logstore.Open(g.dir, logstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	g.eng, err = engine.Open(st, engine.Options{
		Now: g.clock.now, NewID: g.newLeaseID, AutoCompactFactor: -1,
		RetainDone: l.RetainDone, ResultCacheMax: l.ResultCacheMax,
		ResultCacheAge: time.Duration(l.ResultCacheAgeMs) * time.Millisecond, AuditMax: l.AuditMax,
		MaxTurns: l.MaxTurns, MaxTurnsBytes: l.MaxTurnsBytes,
	})
	if err != nil {
		st.Close()
		log.Fatal(err)
	}
}

func (g *scenario) close() {
	if err := g.eng.Close(); err != nil {
		log.Fatal(err)
	}
	g.eng = nil
}

func (g *scenario) send(task mailbox.Task) {
	if _, err := g.eng.Send(context.Background(), task); err != nil {
		log.Fatalf("send %s: %v", task.ID, err)
	}
}

// lease leases the oldest task for recipient, which must be task want.
func (g *scenario) lease(recipient string, want int) string {
	task, lease, err := g.eng.Lease(context.Background(), recipient)
	if err != nil || task == nil || task.ID != taskID(want) {
		log.Fatalf("lease for %s = %v, %v, want task %s", recipient, task, err, taskID(want))
	}
	return lease.LeaseID
}

func (g *scenario) post(r mailbox.Result) {
	if err := g.eng.PostResult(context.Background(), r); err != nil {
		log.Fatalf("post result for %s: %v", r.TaskID, err)
	}
}

func (g *scenario) repair(req mailbox.RepairRequest) {
	if _, err := g.eng.Repair(g.operator, req); err != nil {
		log.Fatalf("repair %s: %v", req.TaskID, err)
	}
}

// drain drains the oldest result for sender, which must be task want's.
func (g *scenario) drain(sender string, want int) {
	r, err := g.eng.Drain(context.Background(), sender)
	if err != nil || r == nil || r.TaskID != taskID(want) {
		log.Fatalf("drain for %s = %v, %v, want task %s", sender, r, err, taskID(want))
	}
}

// skipRecord appends the record_skipped event `mailroom log repair` writes
// in place of a record it moved aside. Only repair writes one, and repair
// names the temporary paths it worked on, so it is appended here directly
// (as repair does, through the store's encoder) with a reason of the same
// shape.
func (g *scenario) skipRecord(seq uint64) {
	st, err := logstore.Open(g.dir, logstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan error, 1)
	st.AppendUnit([]mailbox.Event{{Seq: seq, AtMs: g.clock.now().UnixMilli(), Type: mailbox.EventRecordSkipped,
		Reason: fmt.Sprintf("moved aside by 'mailroom log repair': seq %d (log-%020d.jsonl, line 1) could not be replayed; the original record is line 1 of log-%020d.jsonl.broken; the operator's reason: written by the 1.4.0 bug", seq, seq, seq)}},
		func(err error) { done <- err })
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
}

func text(s string) mailbox.Content { return mailbox.Content{Type: mailbox.ContentText, Text: s} }

// run writes the scenario. The comments give each event's seq.
func (g *scenario) run() {
	const planner, coder, writer = "planner@local", "coder@local", "writer@local"
	const lead, analyst = "lead@local", "analyst@local"
	kind := func(k string) *string { return &k }
	deadline := int64(1735776000000) // 2025-01-02T00:00:00Z
	review := mailbox.Task{ID: taskID(1), Sender: planner, Recipient: coder, IntentText: "review the design doc",
		TaskKind: kind("review"), Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "review-1"}}

	// Phase 1, folded into the snapshot: a task in each state.
	g.open(limitsA)                                                                                                                  // 1 limits_set
	g.send(review)                                                                                                                   // 2
	g.send(mailbox.Task{ID: taskID(2), Sender: planner, Recipient: coder, IntentText: "write the changelog"})                        // 3
	g.send(mailbox.Task{ID: taskID(3), Sender: planner, Recipient: writer, IntentText: "draft release notes"})                       // 4
	g.send(mailbox.Task{ID: taskID(4), Sender: planner, Recipient: writer, IntentText: "translate the README"})                      // 5
	l1 := g.lease(coder, 1)                                                                                                          // 6
	g.post(mailbox.Result{TaskID: taskID(1), Status: mailbox.StatusOK, Content: []mailbox.Content{text("looks good")}, LeaseID: l1}) // 7: cached
	l2 := g.lease(coder, 2)                                                                                                          // 8
	g.repair(mailbox.RepairRequest{TaskID: taskID(2), Reason: "worker crashed",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l2, DuplicateRisk: mailbox.RiskOperatorAccepted}}) // 9: queued
	l3 := g.lease(writer, 3) // 10
	g.repair(mailbox.RepairRequest{TaskID: taskID(3), Reason: "agent gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: l3, Message: "writer@local stopped responding"}}) // 11: result_pending
	g.drain(planner, 1)      // 12: done
	l4 := g.lease(writer, 4) // 13: in_flight
	// The registry, an A2A task delivered to its caller (its result kept),
	// and a canceled task, all in the snapshot.
	g.register(coder, coderCard)                                                                                                     // 14 agent_registered
	g.register(writer, mailbox.AgentCard{Name: "Writer", Skills: []mailbox.AgentSkill{}})                                            // 15
	g.send(a2aTask(10, reviewer, "a2a-msg-10", "ctx-1", msg10))                                                                      // 16
	l10 := g.lease(reviewer, 10)                                                                                                     // 17
	g.post(mailbox.Result{TaskID: taskID(10), Status: mailbox.StatusOK, Content: []mailbox.Content{text("approved")}, LeaseID: l10}) // 18
	g.delivered(10)                                                                                                                  // 19 result_drained by the caller
	g.send(mailbox.Task{ID: taskID(11), Sender: planner, Recipient: reviewer, IntentText: "review PR 8"})                            // 20
	g.cancel(11, "superseded by PR 9")                                                                                               // 21 task_canceled: queued
	// Conversations in the snapshot: two tasks waiting on their sender,
	// one whose question it drained and one whose question it has not.
	g.send(mailbox.Task{ID: taskID(19), Sender: lead, Recipient: analyst, IntentText: "pick the database for the report"}) // 22
	l19 := g.lease(analyst, 19)                                                                                            // 23
	g.post(mailbox.Result{TaskID: taskID(19), Status: mailbox.StatusInputRequired, LeaseID: l19,
		Content: []mailbox.Content{text("staging or production?")}}) // 24 result_posted: input_required, waiting
	g.send(mailbox.Task{ID: taskID(20), Sender: lead, Recipient: analyst, IntentText: "rotate the API key"}) // 25
	l20 := g.lease(analyst, 20)                                                                              // 26
	g.post(mailbox.Result{TaskID: taskID(20), Status: mailbox.StatusAuthRequired, LeaseID: l20,
		Content: []mailbox.Content{text("I need a token for the key vault"), {Type: mailbox.ContentJSON, Value: json.RawMessage(`{"scope":"vault:write"}`)}}}) // 27 result_posted: auth_required, undrained
	g.drain(lead, 19) // 28 result_drained: task 19 still waits
	// Push notifications in the snapshot: an A2A task with a push config
	// (a token, an authentication), leased: the notification of the
	// config's setting dead-lettered, the lease's pending.
	g.send(a2aTask(26, reviewer, "a2a-msg-26", "ctx-4", msg26)) // 29
	g.setPush(26, mailbox.PushConfig{ID: "hook-26", URL: "http://127.0.0.1:9/hooks/a2a", Token: "tok-26",
		Authentication: &mailbox.PushAuth{Schemes: []string{"Bearer"}, Credentials: "receiver-secret"}}) // 30 push_config_set
	g.lease(reviewer, 26)                                                                                       // 31: a notification pending
	g.deadLetter(g.outbox(0), 8, "POST http://127.0.0.1:9/hooks/a2a: dial tcp 127.0.0.1:9: connection refused") // 32 push_dead_lettered
	if out, err := g.eng.Compact(context.Background()); err != nil || out.Seq != 32 {
		log.Fatalf("compact = %+v, %v, want a snapshot at seq 32", out, err)
	}
	g.close()

	// Phase 2, the segment after the snapshot: every event type.
	g.skipRecord(33)
	g.open(limitsB) // 34 limits_set
	g.send(mailbox.Task{ID: taskID(5), Sender: planner, Recipient: coder, IntentText: "fix the flaky test\nsee CI run #42 (café)",
		TaskKind: kind("fix"), Parent: taskID(1), DeadlineMs: &deadline,
		Idempotency: &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: "fix-42"}}) // 35 task_sent with every optional field
	dup := review
	dup.ID = taskID(6)
	g.send(dup)            // 36 result_replayed from task 1
	l2 = g.lease(coder, 2) // 37: attempt 2
	g.post(mailbox.Result{TaskID: taskID(2), Status: mailbox.StatusOK, LeaseID: l2, Content: []mailbox.Content{
		text("changelog written"),
		{Type: mailbox.ContentJSON, Value: json.RawMessage(`{"commit":"abc123","files":["CHANGELOG.md"],"lines":{"added":12,"removed":0},"draft":false,"note":null}`)},
	}}) // 38 result_posted: text and json
	l5 := g.lease(coder, 5) // 39
	g.repair(mailbox.RepairRequest{TaskID: taskID(5), Reason: "coder@local restarted",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l5, DuplicateRisk: mailbox.RiskIdempotent}}) // 40 task_requeued: idempotent
	g.lease(coder, 5) // 41
	rep, err := g.eng.RetryStale(context.Background(), mailbox.RetryPolicy{Enabled: true, MinLeaseAgeMs: 1000, MaxAttempts: 5, MaxRequeues: 10, ScanLimit: 100})
	if err != nil || len(rep.Requeued) != 1 || rep.Requeued[0].TaskID != taskID(5) {
		log.Fatalf("retry-stale = %+v, %v, want task 5 requeued", rep, err)
	} // 42 task_requeued: auto
	l5 = g.lease(coder, 5) // 43: attempt 3
	g.repair(mailbox.RepairRequest{TaskID: taskID(5), Reason: "stuck on attempt 3",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: l5, Message: "gave up after three attempts"}}) // 44 task_force_errored
	g.post(mailbox.Result{TaskID: taskID(4), Status: mailbox.StatusError, LeaseID: l4, Content: []mailbox.Content{},
		ErrorMessage: "the README has no source language"}) // 45 result_posted: error
	g.drain(planner, 3)                                                                                    // 46 result_drained
	g.send(mailbox.Task{ID: taskID(7), Sender: planner, Recipient: writer, IntentText: "check the links"}) // 47
	l7 := g.lease(writer, 7)                                                                               // 48
	g.repair(mailbox.RepairRequest{TaskID: taskID(7), Reason: "writer@local hung",
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: l7, DuplicateRisk: mailbox.RiskOperatorAccepted}}) // 49 task_requeued: operator_accepted
	l7 = g.lease(writer, 7)                                                                                                                         // 50
	g.post(mailbox.Result{TaskID: taskID(7), Status: mailbox.StatusPartial, LeaseID: l7, Content: []mailbox.Content{text("3 of 5 links checked")}}) // 51 result_posted: partial
	g.send(mailbox.Task{ID: taskID(8), Sender: planner, Recipient: writer, IntentText: "tag the release"})                                          // 52
	g.lease(writer, 8)                                                                                                                              // 53: in_flight at the end
	g.send(mailbox.Task{ID: taskID(9), Sender: planner, Recipient: coder, IntentText: "bump the version"})                                          // 54: queued at the end
	g.register(writer, writerCard)                                                                                                                  // 55 agent_registered: replaces the card
	g.register("scratch@local", mailbox.AgentCard{Name: "Scratch", Skills: []mailbox.AgentSkill{}})                                                 // 56
	g.deregister("scratch@local")                                                                                                                   // 57 agent_deregistered
	g.send(a2aTask(12, reviewer, "a2a-msg-12", "ctx-1", msg12))                                                                                     // 58
	g.lease(reviewer, 12)                                                                                                                           // 59
	g.cancel(12, "")                                                                                                                                // 60 task_canceled: in flight
	g.send(a2aTask(13, reviewer, "a2a-msg-13", "ctx-2", msg13))                                                                                     // 61: queued at the end
	// A batch: three tasks sent as one unit (the first event says so), and
	// two results posted as one unit.
	g.sendBatch(
		mailbox.Task{ID: taskID(14), Sender: planner, Recipient: writer, IntentText: "batch one"},
		mailbox.Task{ID: taskID(15), Sender: planner, Recipient: writer, IntentText: "batch two"},
		mailbox.Task{ID: taskID(16), Sender: planner, Recipient: writer, IntentText: "batch three"}) // 62-64 task_sent, unit 3
	l14 := g.lease(writer, 14) // 65
	l15 := g.lease(writer, 15) // 66
	g.postResults(
		mailbox.Result{TaskID: taskID(14), Status: mailbox.StatusOK, LeaseID: l14, Content: []mailbox.Content{text("one")}},
		mailbox.Result{TaskID: taskID(15), Status: mailbox.StatusOK, LeaseID: l15, Content: []mailbox.Content{text("two")}}) // 67-68 result_posted, unit 2
	// Tasks sent through Covenant's dialect, with the public keys of its
	// AgentIds: one leased, one left queued.
	g.send(covenantTask(17, "fetch papers"))    // 69
	g.lease("bob@local", 17)                    // 70
	g.send(covenantTask(18, "rank the papers")) // 71: queued at the end
	// Conversations: replies to the snapshot's waiting tasks (task 20's
	// question undrained, so the reply drops it), leases that carry every
	// turn, a question drained while its task waits, a refusal, a question
	// left waiting at the end, and a waiting task force-errored by the
	// operator and one canceled by its A2A caller.
	g.reply(lead, 20, nil, text("the token is in the vault at ops/api"))                                                                // 72 task_replied: undrained question
	l20 = g.leaseTurns(analyst, 20, 2)                                                                                                  // 73: attempt 2, two turns
	g.post(mailbox.Result{TaskID: taskID(20), Status: mailbox.StatusOK, LeaseID: l20, Content: []mailbox.Content{text("key rotated")}}) // 74
	g.reply(lead, 19, nil, text("staging"))                                                                                             // 75 task_replied: drained question
	l19 = g.leaseTurns(analyst, 19, 2)                                                                                                  // 76
	g.post(mailbox.Result{TaskID: taskID(19), Status: mailbox.StatusInputRequired, LeaseID: l19,
		Content: []mailbox.Content{text("which schema, public or reports?")}}) // 77 result_posted: input_required again
	g.drain(lead, 20)                       // 78 result_drained
	g.drain(lead, 19)                       // 79 result_drained: a question, task 19 waits
	g.reply(lead, 19, nil, text("reports")) // 80
	l19 = g.leaseTurns(analyst, 19, 4)      // 81: attempt 3, four turns
	g.post(mailbox.Result{TaskID: taskID(19), Status: mailbox.StatusRejected, LeaseID: l19,
		Content: []mailbox.Content{}, ErrorMessage: "the reports schema is not mine to read"}) // 82 result_posted: rejected
	g.send(mailbox.Task{ID: taskID(21), Sender: lead, Recipient: analyst, IntentText: "renew the TLS certificate"}) // 83
	l21 := g.lease(analyst, 21)                                                                                     // 84
	g.post(mailbox.Result{TaskID: taskID(21), Status: mailbox.StatusAuthRequired, LeaseID: l21,
		Content: []mailbox.Content{text("I need DNS write access")}}) // 85: waiting at the end, undrained
	g.send(mailbox.Task{ID: taskID(22), Sender: lead, Recipient: analyst, IntentText: "archive old logs"}) // 86
	l22 := g.lease(analyst, 22)                                                                            // 87
	g.post(mailbox.Result{TaskID: taskID(22), Status: mailbox.StatusInputRequired, LeaseID: l22,
		Content: []mailbox.Content{text("older than how many days?")}}) // 88
	g.repair(mailbox.RepairRequest{TaskID: taskID(22), Reason: "nobody answers",
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, Message: "lead@local never answered"}}) // 89 task_force_errored: waiting, no lease id
	g.send(a2aTask(23, analyst, "a2a-msg-23", "ctx-3", msg23)) // 90
	l23 := g.lease(analyst, 23)                                // 91
	g.post(mailbox.Result{TaskID: taskID(23), Status: mailbox.StatusInputRequired, LeaseID: l23,
		Content: []mailbox.Content{text("which branch?")}}) // 92
	g.reply("caller@a2a", 23, &mailbox.A2AOrigin{Version: "0.3", MessageID: "a2a-msg-23b", ContextID: "ctx-3", Message: json.RawMessage(msg23b)},
		text("main")) // 93 task_replied: an A2A message
	l23 = g.leaseTurns(analyst, 23, 2) // 94
	g.post(mailbox.Result{TaskID: taskID(23), Status: mailbox.StatusInputRequired, LeaseID: l23,
		Content: []mailbox.Content{text("which commit on main?")}}) // 95
	g.cancel(23, "found it myself") // 96 task_canceled: waiting
	// Remote agents: an agent registered as a remote A2A server (no name of
	// its own: the remote's is served), a task leased on its behalf and
	// accepted by the remote, and one accepted that then asks its sender,
	// so the remote's ids stay on the task through its conversation.
	g.register(remote, mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: "http://127.0.0.1:9/", Binding: mailbox.BindingJSONRPC03, Concurrency: 2}}) // 97 agent_registered: remote
	g.send(mailbox.Task{ID: taskID(24), Sender: planner, Recipient: remote, IntentText: "summarize the incident"})                                    // 98
	l24 := g.lease(remote, 24)                                                                                                                        // 99
	g.accepted(24, l24, mailbox.RemoteRef{TaskID: "remote-task-24", ContextID: "remote-ctx-24", Binding: mailbox.BindingJSONRPC03})                   // 100 remote_accepted
	g.send(mailbox.Task{ID: taskID(25), Sender: planner, Recipient: remote, IntentText: "page the owner"})                                            // 101
	l25 := g.lease(remote, 25)                                                                                                                        // 102
	g.accepted(25, l25, mailbox.RemoteRef{TaskID: "remote-task-25", Binding: mailbox.BindingJSONRPC03})                                               // 103
	g.post(mailbox.Result{TaskID: taskID(25), Status: mailbox.StatusInputRequired, LeaseID: l25, Content: []mailbox.Content{text("which owner?")}})   // 104: waiting, its remote kept
	// Push notifications: the snapshot's pending one delivered, its dead
	// letter retried by the operator and delivered; a v1.0 task sent with
	// a config inside the message (one unit), a second config set, the
	// lease told to both, the second deleted (its notifications with it),
	// the result told, one dead-lettered and dropped, one left pending.
	g.pushDelivered(g.outbox(1), 1)                  // 105 push_delivered
	g.retryPush(g.outbox(0), "the receiver is back") // 106 push_retried
	g.pushDelivered(g.outbox(0), 1)                  // 107
	g.sendWithPush(a2aTask(27, triage, "a2a-msg-27", "ctx-5", msg27),
		mailbox.PushConfig{URL: "https://hooks.example.com/a2a?tenant=7", Token: "tok-27"}) // 108-109 task_sent, push_config_set: unit 2
	g.setPush(27, mailbox.PushConfig{ID: "audit", URL: "http://127.0.0.1:9/audit"})                                            // 110
	l27 := g.lease(triage, 27)                                                                                                 // 111: two notifications
	g.deletePush(27, "audit")                                                                                                  // 112 push_config_deleted
	g.post(mailbox.Result{TaskID: taskID(27), Status: mailbox.StatusOK, LeaseID: l27, Content: []mailbox.Content{text("ok")}}) // 113
	g.deadLetter(g.outbox(0), 3, "POST https://hooks.example.com/a2a?tenant=7: 500 Internal Server Error")                     // 114
	g.dropPush(g.outbox(0), "the tenant was deleted")                                                                          // 115 push_dropped
	// A native sender's webhook on its registry entry: its result waiting
	// is a notification for it, left pending at the end.
	g.register(dispatcher, mailbox.AgentCard{Name: "Dispatcher", Skills: []mailbox.AgentSkill{},
		Webhook: &mailbox.Webhook{URL: "http://127.0.0.1:9/results", Token: "tok-dispatcher"}}) // 116 agent_registered: card.webhook
	g.send(mailbox.Task{ID: taskID(28), Sender: dispatcher, Recipient: triage, IntentText: "triage the alert"})                   // 117
	l28 := g.lease(triage, 28)                                                                                                    // 118
	g.post(mailbox.Result{TaskID: taskID(28), Status: mailbox.StatusOK, LeaseID: l28, Content: []mailbox.Content{text("noise")}}) // 119: a notification for the webhook
	// A dead agent's queued backlog: one task moved to a live agent, one
	// canceled (its sender's error result waiting, told to its webhook).
	g.send(mailbox.Task{ID: taskID(29), Sender: dispatcher, Recipient: gone, IntentText: "page the owner"})  // 120
	g.send(mailbox.Task{ID: taskID(30), Sender: dispatcher, Recipient: gone, IntentText: "close the alert"}) // 121
	g.repair(mailbox.RepairRequest{TaskID: taskID(29), Reason: "pager@local is gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionMove, QueuedFor: gone, Recipient: triage}}) // 122 task_moved
	g.repair(mailbox.RepairRequest{TaskID: taskID(30), Reason: "pager@local is gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionCancel, QueuedFor: gone}}) // 123 task_withdrawn
	// What a dead sender owes: a question its worker asked it, handed to
	// a live agent (the question undrained, so it waits for the new
	// sender), and an undrained result handed to an agent the mailbox
	// did not know (new_agent).
	g.send(mailbox.Task{ID: taskID(31), Sender: gone, Recipient: "scribe@local", IntentText: "which runbook?"}) // 124
	l31 := g.lease("scribe@local", 31)                                                                          // 125
	g.post(mailbox.Result{TaskID: taskID(31), Status: mailbox.StatusInputRequired, LeaseID: l31,
		Content: []mailbox.Content{text("the old one or the new one?")}}) // 126: waiting on pager@local
	g.repair(mailbox.RepairRequest{TaskID: taskID(31), Reason: "pager@local is gone",
		Command: mailbox.RepairCommand{Action: mailbox.ActionHandOver, SentBy: gone, Sender: dispatcher}}) // 127 task_handed_over
	g.repair(mailbox.RepairRequest{TaskID: taskID(30), Reason: "the on-call desk reads these now",
		Command: mailbox.RepairCommand{Action: mailbox.ActionHandOver, SentBy: dispatcher, Sender: "oncall@local", NewAgent: true}}) // 128 task_handed_over
	g.close()
}

const remote, triage, dispatcher, gone = "remote@local", "triage@local", "dispatcher@local", "pager@local"

// outbox returns the id of the i-th notification of the outbox.
func (g *scenario) outbox(i int) string {
	ns, err := g.eng.Push().Outbox(context.Background())
	if err != nil || len(ns) <= i {
		log.Fatalf("outbox = %+v, %v, want a notification %d", ns, err, i)
	}
	return ns[i].ID
}

func (g *scenario) setPush(n int, c mailbox.PushConfig) {
	if _, err := g.eng.SetPushConfig(g.caller(), taskID(n), c); err != nil {
		log.Fatalf("set push config on %s: %v", taskID(n), err)
	}
}

func (g *scenario) sendWithPush(t mailbox.Task, c mailbox.PushConfig) {
	if _, err := g.eng.SendWithPush(g.caller(), t, c); err != nil {
		log.Fatalf("send %s with a push config: %v", t.ID, err)
	}
}

func (g *scenario) deletePush(n int, id string) {
	if err := g.eng.DeletePushConfig(g.caller(), taskID(n), id); err != nil {
		log.Fatalf("delete push config %s of %s: %v", id, taskID(n), err)
	}
}

func (g *scenario) deadLetter(id string, attempts int, lastError string) {
	if err := g.eng.Push().DeadLettered(context.Background(), id, attempts, lastError); err != nil {
		log.Fatalf("dead-letter %s: %v", id, err)
	}
}

func (g *scenario) pushDelivered(id string, attempts int) {
	if err := g.eng.Push().Delivered(context.Background(), id, attempts); err != nil {
		log.Fatalf("push delivered %s: %v", id, err)
	}
}

func (g *scenario) retryPush(id, reason string) {
	if _, err := g.eng.RetryNotification(g.operator, id, reason); err != nil {
		log.Fatalf("retry %s: %v", id, err)
	}
}

func (g *scenario) dropPush(id, reason string) {
	if err := g.eng.DropNotification(g.operator, id, reason); err != nil {
		log.Fatalf("drop %s: %v", id, err)
	}
}

// accepted records the remote's acceptance of task n under lease.
func (g *scenario) accepted(n int, lease string, ref mailbox.RemoteRef) {
	if err := g.eng.Remote().Accepted(context.Background(), taskID(n), lease, ref); err != nil {
		log.Fatalf("remote accepted %s: %v", taskID(n), err)
	}
}

// reply answers task n for sender.
func (g *scenario) reply(sender string, n int, a2a *mailbox.A2AOrigin, content ...mailbox.Content) {
	if _, err := g.eng.Reply(context.Background(), mailbox.Reply{TaskID: taskID(n), Sender: sender, Content: content, A2A: a2a}); err != nil {
		log.Fatalf("reply to %s: %v", taskID(n), err)
	}
}

// leaseTurns leases task want for recipient, which must carry turns turns:
// a lease after a reply hands the worker the whole conversation.
func (g *scenario) leaseTurns(recipient string, want, turns int) string {
	task, lease, err := g.eng.Lease(context.Background(), recipient)
	if err != nil || task == nil || task.ID != taskID(want) || len(task.Turns) != turns {
		log.Fatalf("lease for %s = %+v, %v, want task %s with %d turns", recipient, task, err, taskID(want), turns)
	}
	return lease.LeaseID
}

// covenantTask is a task as Covenant's dialect sends it: the sender's and
// recipient's keys (base58 of 32 bytes of 1 to 32, and of 32 bytes of 11)
// kept with it.
func covenantTask(n int, intent string) mailbox.Task {
	return mailbox.Task{ID: taskID(n), Sender: "alice@local", Recipient: "bob@local", IntentText: intent,
		Covenant: &mailbox.CovenantOrigin{SenderPubkey: "4wBqpZM9xaSheZzJSMawUKKwhdpChKbZ5eu5ky4Vigw", RecipientPubkey: "k7FaK87WHGVXzkaoHb7CdVPgkKDQhZ29VLDeBVbDfYn"}}
}

func (g *scenario) sendBatch(tasks ...mailbox.Task) {
	items, err := g.eng.SendBatch(context.Background(), tasks)
	if err != nil {
		log.Fatalf("send batch: %v", err)
	}
	for _, it := range items {
		if !it.OK() {
			log.Fatalf("send batch: %+v", it)
		}
	}
}

func (g *scenario) postResults(results ...mailbox.Result) {
	items, err := g.eng.PostResults(context.Background(), results)
	if err != nil {
		log.Fatalf("post results: %v", err)
	}
	for _, it := range items {
		if !it.OK() {
			log.Fatalf("post results: %+v", it)
		}
	}
}

const reviewer = "reviewer@local"

// The A2A messages of the golden A2A tasks: v0.3 (with kinds) and v1.0.
const (
	msg10  = `{"kind":"message","role":"user","messageId":"a2a-msg-10","parts":[{"kind":"text","text":"review PR 7"}]}`
	msg12  = `{"role":"ROLE_USER","messageId":"a2a-msg-12","contextId":"ctx-1","parts":[{"text":"check the migration"},{"data":{"table":"tasks","rows":3}},{"url":"https://example.com/m.sql","mediaType":"application/sql","filename":"m.sql"}],"metadata":{"mailroom.sender":"caller@a2a"}}`
	msg13  = `{"kind":"message","role":"user","messageId":"a2a-msg-13","parts":[{"kind":"data","data":{"q":1}}]}`
	msg23  = `{"kind":"message","role":"user","messageId":"a2a-msg-23","contextId":"ctx-3","parts":[{"kind":"text","text":"find the regression"}]}`
	msg26  = `{"kind":"message","role":"user","messageId":"a2a-msg-26","contextId":"ctx-4","parts":[{"kind":"text","text":"review PR 11"}]}`
	msg27  = `{"role":"ROLE_USER","messageId":"a2a-msg-27","contextId":"ctx-5","parts":[{"text":"review PR 12"}]}`
	msg23b = `{"kind":"message","role":"user","messageId":"a2a-msg-23b","contextId":"ctx-3","taskId":"7a5c0000-0000-4000-8000-000000000023","parts":[{"kind":"text","text":"main"}]}`
)

var (
	coderCard = mailbox.AgentCard{Name: "Coder", Description: "writes and fixes Go", Version: "1.2.0",
		Skills: []mailbox.AgentSkill{
			{ID: "fix", Name: "Fix", Description: "fixes failing tests", Tags: []string{"go", "ci"}, Examples: []string{"fix the flaky test"}},
			{ID: "review", Name: "Review", Description: "reviews a change", Tags: []string{}, Examples: []string{}},
		},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain", "application/json"}}
	writerCard = mailbox.AgentCard{Name: "Writer", Description: "release notes and docs", Version: "2.0.0",
		Skills: []mailbox.AgentSkill{{ID: "notes", Name: "Release notes", Description: "drafts release notes", Tags: []string{"docs"}, Examples: []string{}}}}
)

// a2aTask is a task as the A2A edge sends it: the caller's message kept.
func a2aTask(n int, recipient, messageID, contextID, message string) mailbox.Task {
	version := "0.3"
	if !strings.Contains(message, `"kind"`) {
		version = "1.0"
	}
	return mailbox.Task{ID: taskID(n), Sender: "caller@a2a", Recipient: recipient, IntentText: "sent through the A2A edge",
		A2A: &mailbox.A2AOrigin{Version: version, MessageID: messageID, ContextID: contextID, Message: json.RawMessage(message)}}
}

func (g *scenario) register(agent string, card mailbox.AgentCard) {
	if _, err := g.eng.RegisterAgent(g.operator, agent, card); err != nil {
		log.Fatalf("register %s: %v", agent, err)
	}
}

func (g *scenario) deregister(agent string) {
	if err := g.eng.DeregisterAgent(g.operator, agent); err != nil {
		log.Fatalf("deregister %s: %v", agent, err)
	}
}

// caller is the A2A caller: it cancels and takes delivery of its tasks.
func (g *scenario) caller() context.Context {
	return mailbox.WithPrincipal(context.Background(), "caller@a2a")
}

func (g *scenario) cancel(n int, reason string) {
	if _, err := g.eng.Cancel(g.caller(), taskID(n), reason); err != nil {
		log.Fatalf("cancel %s: %v", taskID(n), err)
	}
}

func (g *scenario) delivered(n int) {
	if err := g.eng.Delivered(g.caller(), taskID(n)); err != nil {
		log.Fatalf("delivered %s: %v", taskID(n), err)
	}
}

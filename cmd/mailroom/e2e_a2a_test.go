package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/internal/sse/ssetest"
	"github.com/mailroom/mailroom/mailbox"
)

// A2A under kill -9: every task the edge acknowledged survives, and a
// stream resumed with Last-Event-ID on the restarted daemon ends at the
// task's terminal state without a gap.

type sseEvent struct {
	id   uint64
	data json.RawMessage
}

// readSSE reads events from an open stream until it ends or n were read
// (n < 0: until it ends).
func readSSE(t *testing.T, resp *http.Response, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	rd := ssetest.NewReader(resp.Body)
	for n < 0 || len(out) < n {
		b, err := rd.NextEvent()
		if err != nil {
			break
		}
		if b.Data == "" {
			continue
		}
		cur := sseEvent{data: json.RawMessage(b.Data)}
		if b.ID != "" {
			id, err := strconv.ParseUint(b.ID, 10, 64)
			if err != nil {
				t.Fatalf("event id %q", b.ID)
			}
			cur.id = id
		}
		out = append(out, cur)
	}
	return out
}

// a2aCall posts a v0.3 JSON-RPC request to the agent's base URL.
func a2aCall(ctx context.Context, base string, headers map[string]string, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// eventState is what a v0.3 stream event says: its kind, and the state it
// shows (status updates and the task) with final.
func eventState(t *testing.T, ev sseEvent) (kind, state string, final bool) {
	t.Helper()
	var rep struct {
		Result struct {
			Kind   string `json:"kind"`
			Final  bool   `json:"final"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(ev.data, &rep); err != nil || rep.Error != nil {
		t.Fatalf("stream event %s: %v", ev.data, err)
	}
	return rep.Result.Kind, rep.Result.Status.State, rep.Result.Final
}

func TestFaultA2AKill9(t *testing.T) {
	dir := t.TempDir()
	p := startProc(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	native, err := client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := native.RegisterAgent(ctx, "coder@local", mailbox.AgentCard{Name: "Coder"}); err != nil {
		t.Fatal(err)
	}
	base := func(addr string) string { return "http://" + addr + "/agents/coder@local/" }

	// A stream that sees the task sent and leased, then loses its daemon.
	resp, err := a2aCall(ctx, base(p.addr), nil, `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"streamed","parts":[{"kind":"text","text":"survive the crash"}]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	first := readSSE(t, resp, 1)
	task, lease, err := native.Lease(ctx, "coder@local")
	if err != nil || task == nil {
		t.Fatalf("lease: %v %v", task, err)
	}
	second := readSSE(t, resp, 1)
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("stream before the crash: %v %v", first, second)
	}
	if k, st, _ := eventState(t, first[0]); k != "task" || st != "submitted" {
		t.Fatalf("first event %s, want the submitted task", first[0].data)
	}
	if k, st, _ := eventState(t, second[0]); k != "status-update" || st != "working" || second[0].id <= first[0].id {
		t.Fatalf("second event %d %s, want working after %d", second[0].id, second[0].data, first[0].id)
	}

	// Senders keep sending through the edge while the daemon is killed.
	var acked acks
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"w%d-%d","parts":[{"kind":"text","text":"job %d"}]},"configuration":{"blocking":false}}}`, w, i, i)
				r, err := a2aCall(ctx, base(p.addr), nil, body)
				if err != nil {
					return // the daemon is gone
				}
				var rep struct {
					Result struct {
						ID string `json:"id"`
					} `json:"result"`
				}
				err = json.NewDecoder(r.Body).Decode(&rep)
				r.Body.Close()
				if err != nil || rep.Result.ID == "" {
					return
				}
				acked.add(rep.Result.ID)
			}
		})
	}
	acked.waitFor(t, 100)
	p.kill9(t)
	close(stop)
	wg.Wait()
	resp.Body.Close()

	p = startProc(t, dir)
	native, err = client.New(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range acked.list() {
		r, err := a2aCall(ctx, base(p.addr), nil, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+id+`"}}`)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Result *struct {
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		err = json.NewDecoder(r.Body).Decode(&rep)
		r.Body.Close()
		if err != nil || rep.Result == nil || rep.Result.Status.State != "submitted" {
			t.Fatalf("acknowledged task %s after kill -9: %+v %s %v", id, rep.Result, rep.Error, err)
		}
	}
	t.Logf("%d acknowledged sends survived kill -9", len(acked.list()))

	// The stream resumes where it was cut: the lease survived, the worker
	// answers, and the resumed stream shows the rest and ends.
	resumed, err := a2aCall(ctx, base(p.addr), map[string]string{"Last-Event-ID": strconv.FormatUint(second[0].id, 10)},
		`{"jsonrpc":"2.0","id":2,"method":"tasks/resubscribe","params":{"id":"`+task.ID+`"}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Body.Close()
	if err := native.PostResult(ctx, mailbox.Result{TaskID: task.ID, LeaseID: lease.LeaseID, Status: mailbox.StatusOK, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "survived"}}}); err != nil {
		t.Fatalf("the lease held before the crash: %v", err)
	}
	rest := readSSE(t, resumed, -1)
	if len(rest) != 2 {
		t.Fatalf("resumed stream: %d events %v, want the artifact and the final status", len(rest), rest)
	}
	if k, _, _ := eventState(t, rest[0]); k != "artifact-update" || rest[0].id <= second[0].id {
		t.Fatalf("resumed stream's first event %d %s, want the artifact after %d", rest[0].id, rest[0].data, second[0].id)
	}
	if k, st, final := eventState(t, rest[1]); k != "status-update" || st != "completed" || !final {
		t.Fatalf("resumed stream's last event %s, want the final completed status", rest[1].data)
	}

	// Resuming from before the lease replays the working status too: no
	// change is skipped, whichever id the client last saw.
	again, err := a2aCall(ctx, base(p.addr), map[string]string{"Last-Event-ID": strconv.FormatUint(first[0].id, 10)},
		`{"jsonrpc":"2.0","id":3,"method":"tasks/resubscribe","params":{"id":"`+task.ID+`"}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Body.Close()
	var states []string
	for _, ev := range readSSE(t, again, -1) {
		k, st, _ := eventState(t, ev)
		states = append(states, k+":"+st)
	}
	if want := "status-update:working artifact-update: status-update:completed"; strings.Join(states, " ") != want {
		t.Fatalf("stream resumed from %d: %v, want %s", first[0].id, states, want)
	}
}

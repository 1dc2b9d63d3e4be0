package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// The demo's A2A side: every worker is registered with a card, so the
// daemon serves it as an A2A server, and an outside caller (an A2A client
// that is no mailbox agent) sends it work through the A2A edge now and
// then and follows the task to its end, as a2a-go or @a2a-js/sdk would.

// A2ACaller is the sender the edge records for the demo's A2A caller.
const A2ACaller = "caller@a2a"

// cards are the demo workers' A2A cards, by worker.
var cards = map[string]mailbox.AgentCard{
	"worker-a@local": {Name: "Summarizer", Description: "summarizes documents and tickets", Version: "1.4.0",
		Skills: []mailbox.AgentSkill{{ID: "summarize", Name: "Summarize", Description: "a short summary of a document", Tags: []string{"text"}, Examples: []string{"summarize the incident report"}},
			{ID: "classify", Name: "Classify", Description: "labels tickets by severity", Tags: []string{"triage"}}}},
	"worker-b@local": {Name: "Translator", Description: "translates release notes and emails", Version: "2.0.1",
		Skills: []mailbox.AgentSkill{{ID: "translate", Name: "Translate", Description: "into German or Japanese", Tags: []string{"i18n"}}}},
	"worker-c@local": {Name: "Reviewer", Description: "reviews pull requests and migrations", Version: "0.9.0",
		Skills: []mailbox.AgentSkill{{ID: "review", Name: "Review", Description: "finds races and schema drift", Tags: []string{"code"}},
			{ID: "plan", Name: "Plan", Description: "breaks a launch into tasks", Tags: []string{"planning"}}}},
}

// register gives every worker its card.
func register(ctx context.Context, a *agent) {
	for _, w := range Workers {
		for {
			if _, err := a.c.RegisterAgent(ctx, w, cards[w]); err == nil {
				break
			} else {
				a.trouble(ctx, "registering "+w, err)
			}
			if !wait(ctx, a.opts.Poll) {
				return
			}
		}
	}
}

// callA2A is the outside caller: every few seconds it sends one message to
// a worker's A2A base URL (non-blocking) and reads the task until it ends.
func callA2A(ctx context.Context, a *agent) {
	register(ctx, a)
	hc := &http.Client{Timeout: 10 * time.Second}
	for n := 0; wait(ctx, a.jitter(a.opts.A2AEvery)); n++ {
		w := Workers[a.rng.IntN(len(Workers))]
		k := kinds[a.rng.IntN(len(kinds))]
		text := fmt.Sprintf(k.intents[a.rng.IntN(len(k.intents))], subjects[a.rng.IntN(len(subjects))])
		base := strings.TrimSuffix(a.c.BaseURL(), "/") + "/agents/" + w + "/"
		msg := map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprintf("demo-%d-%d", a.opts.Seed, n),
			"parts":    []any{map[string]any{"kind": "text", "text": text}, map[string]any{"kind": "data", "data": map[string]any{"priority": 1 + a.rng.IntN(3)}}},
			"metadata": map[string]any{"mailroom.sender": A2ACaller}}
		var task struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		}
		if err := a.rpc(ctx, hc, base, "message/send", map[string]any{"message": msg, "configuration": map[string]any{"blocking": false}}, &task); err != nil {
			a.trouble(ctx, "sending through the A2A edge", err)
			continue
		}
		a.log.Debug("demo A2A caller sent a message", "task", task.ID, "to", w)
		// Follow it as a polling A2A client does, until it ends or the
		// demo moves on (a stale lease may hold it for a long time).
		for i := 0; i < 60 && wait(ctx, a.opts.Poll); i++ {
			if err := a.rpc(ctx, hc, base, "tasks/get", map[string]any{"id": task.ID}, &task); err != nil {
				a.trouble(ctx, "reading an A2A task", err)
				break
			}
			if s := task.Status.State; s == "completed" || s == "failed" || s == "canceled" {
				break
			}
		}
	}
}

// rpc makes one v0.3 JSON-RPC call and decodes its result into out.
func (a *agent) rpc(ctx context.Context, hc *http.Client, url, method string, params, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.opts.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rep struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return fmt.Errorf("%s: HTTP %d, %w", method, resp.StatusCode, err)
	}
	if rep.Error != nil {
		return fmt.Errorf("%s: %d %s", method, rep.Error.Code, rep.Error.Message)
	}
	return json.Unmarshal(rep.Result, out)
}

package outbound_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// A remote that speaks the legacy tasks/send dialect, written from seed
// 004's shapes (gmf_forge's A2AAdapter): its card at agent.json, tasks/send
// only at {base}/rpc, synchronous, status.message a string.
func startLegacy(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("GET /.well-known/agent.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"name": "search_agent", "description": "searches", "url": srv.URL, "version": "0.1.0",
			"skills": []map[string]any{{"id": "search", "name": "Search", "description": "finds papers"}}})
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
			Params struct {
				ID      string `json:"id"`
				Message struct {
					Parts []struct{ Type, Text string } `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Method != "tasks/send" {
			writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": body.ID, "error": map[string]any{"code": -32601, "message": "Method not found: " + body.Method}})
			return
		}
		text := ""
		if len(body.Params.Message.Parts) > 0 {
			text = body.Params.Message.Parts[0].Text
		}
		state, msg, artifacts := "completed", any(nil), []any{map[string]any{"parts": []any{map[string]any{"type": "text", "text": "did: " + text}}}}
		if strings.HasPrefix(text, "fail") {
			state, msg, artifacts = "failed", "no results for that query", nil
		}
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": body.ID, "result": map[string]any{
			"id": body.Params.ID, "status": map[string]any{"state": state, "message": msg}, "artifacts": artifacts}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func TestLegacyRemote(t *testing.T) {
	w := start(t)
	srv := startLegacy(t)
	if _, err := w.c.RegisterAgent(w.ctx, "search@remote", mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: srv.URL, Binding: mailbox.BindingLegacy}}); err != nil {
		t.Fatal(err)
	}
	id := w.send("planner@local", "search@remote", "find papers on leases", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusOK || text(res) != "did: find papers on leases" {
		t.Fatalf("result %+v", res)
	}
	if rec := w.record(id); rec.Remote == nil || rec.Remote.Binding != mailbox.BindingLegacy || rec.Remote.TaskID != id {
		t.Fatalf("remote %+v, want the legacy task, its id the task id", rec.Remote)
	}
	id = w.send("planner@local", "search@remote", "fail this", false)
	if res := w.result("planner@local", id); res.Status != mailbox.StatusError || res.ErrorMessage != "no results for that query" {
		t.Fatalf("result %+v", res)
	}
	if c := w.info("search@remote").Card; c == nil || c.Name != "search_agent" || !c.HasSkill("search") {
		t.Fatalf("card %+v, want the legacy remote's", c)
	}
}

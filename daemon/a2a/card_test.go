package a2a_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// The card has a validator of its content and a policy that lets a client
// keep it a minute and revalidate: If-None-Match with its ETag is 304
// until the card is registered anew.
func TestCardIsRevalidatable(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	base := it.register("coder@local")
	url := base + ".well-known/agent-card.json"
	get := func(inm string) (edgeReply, http.Header) {
		t.Helper()
		req := mustRequest(t, "GET", url)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return edgeReply{resp.StatusCode, resp.Header.Get("Content-Type"), b}, resp.Header
	}
	r, h := get("")
	etag := h.Get("ETag")
	if r.status != 200 || len(etag) < 3 || etag[0] != '"' || h.Get("Cache-Control") != "max-age=60" || r.ctype != "application/json" {
		t.Fatalf("card: %d, ETag %q, Cache-Control %q, %s; want 200 with an ETag and max-age=60", r.status, etag, h.Get("Cache-Control"), r.ctype)
	}
	if again, h2 := get(""); h2.Get("ETag") != etag || !bytes.Equal(again.body, r.body) {
		t.Fatalf("the same card twice: ETag %q then %q", etag, h2.Get("ETag"))
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		if r, h := get(inm); r.status != 304 || len(r.body) != 0 || h.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d %q ETag %q; want 304, empty, the same ETag", inm, r.status, r.body, h.Get("ETag"))
		}
	}
	if r, _ := get(`"stale"`); r.status != 200 {
		t.Errorf("If-None-Match of another card: %d, want 200", r.status)
	}
	if _, err := it.native.RegisterAgent(it.ctx, "coder@local", mailbox.AgentCard{Name: "Coder", Description: "now writes Rust"}); err != nil {
		t.Fatal(err)
	}
	r, h = get(etag)
	if r.status != 200 || h.Get("ETag") == etag || !bytes.Contains(r.body, []byte("now writes Rust")) {
		t.Fatalf("after registering a new card, If-None-Match of the old: %d ETag %q %s; want 200 with the new card", r.status, h.Get("ETag"), r.body)
	}
}

// Marianne (seed 000) registers cards whose skills have no name; the
// served card is valid A2A all the same, each skill named by its id, and
// the official a2a-go client reads it.
func TestMarianneCardWithoutSkillNames(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	card := mailbox.AgentCard{Name: "canyon", Description: "architecture and reviews",
		Skills: []mailbox.AgentSkill{{ID: "architecture-review", Description: "reviews a module's architecture"}, {ID: "forge", Name: "Forge"}}}
	reg, err := it.native.RegisterAgent(it.ctx, "canyon@local", card)
	if err != nil {
		t.Fatalf("registering Marianne's card: %v", err)
	}
	if reg.Card.Skills[0].Name != "" {
		t.Errorf("the registry holds skill name %q; want the card as registered (no name)", reg.Card.Skills[0].Name)
	}
	base := it.base + "/agents/canyon@local/"
	_, served := it.a2aClient(base, a2aclient.Config{Polling: true})
	if len(served.Skills) != 2 || served.Skills[0].Name != "architecture-review" || served.Skills[0].ID != "architecture-review" ||
		served.Skills[0].Description != "reviews a module's architecture" || served.Skills[1].Name != "Forge" {
		t.Fatalf("served skills %+v; want the first named by its id, the second by its name", served.Skills)
	}
}

// Card text that could take over a terminal is refused at registration,
// naming the field, the character and what is expected, and changes
// nothing; descriptions may hold line feeds and tabs, and read back as
// registered.
func TestCardTextRefusals(t *testing.T) {
	it := newInterop(t, daemontest.Options{})
	ok := mailbox.AgentCard{Name: "Coder", Description: "writes Go", Skills: []mailbox.AgentSkill{{ID: "code", Name: "Code", Tags: []string{"go"}, Examples: []string{"fix it"}}}}
	with := func(f func(c *mailbox.AgentCard)) mailbox.AgentCard {
		c := ok
		c.Skills = append([]mailbox.AgentSkill(nil), ok.Skills...)
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name  string
		card  mailbox.AgentCard
		field string
		char  string
	}{
		{"RLO in the name", with(func(c *mailbox.AgentCard) { c.Name = "Coder\u202egnp.exe" }), "name", "U+202E (RIGHT-TO-LEFT OVERRIDE)"},
		{"escape in the description", with(func(c *mailbox.AgentCard) { c.Description = "ok\x1b[2J" }), "description", "U+001B (ESCAPE)"},
		{"NUL in the version", with(func(c *mailbox.AgentCard) { c.Version = "1\x00" }), "version", "U+0000 (NUL)"},
		{"CR in a description", with(func(c *mailbox.AgentCard) { c.Description = "line\r\nline" }), "description", "U+000D (CARRIAGE RETURN)"},
		{"LF in a skill name", with(func(c *mailbox.AgentCard) { c.Skills[0].Name = "Co\nde" }), "skills[0].name", "U+000A (LINE FEED)"},
		{"tab in a skill id", with(func(c *mailbox.AgentCard) { c.Skills[0].ID = "co\tde" }), "skills[0].id", "U+0009 (TAB)"},
		{"isolate in a tag", with(func(c *mailbox.AgentCard) { c.Skills[0].Tags = []string{"go", "\u2066x"} }), "skills[0].tags[1]", "U+2066"},
		{"C1 in an example", with(func(c *mailbox.AgentCard) { c.Skills[0].Examples = []string{"a\u009bb"} }), "skills[0].examples[0]", "U+009B"},
		{"DEL in a skill description", with(func(c *mailbox.AgentCard) { c.Skills[0].Description = "x\x7f" }), "skills[0].description", "U+007F (DELETE)"},
		{"line separator in a mode", with(func(c *mailbox.AgentCard) { c.DefaultInputModes = []string{"text/plain\u2028"} }), "default_input_modes[0]", "U+2028"},
	} {
		before := it.seq()
		_, err := it.native.RegisterAgent(it.ctx, "coder@local", tc.card)
		msg := mailbox.ErrorMessage(err)
		if mailbox.ErrorCode(err) != mailbox.CodeInvalid || !strings.HasPrefix(msg, tc.field+": got "+tc.char) || !strings.Contains(msg, "expected") {
			t.Errorf("%s: %v; want a 400 naming %s and %s", tc.name, err, tc.field, tc.char)
		}
		if after := it.seq(); after != before {
			t.Errorf("%s: the refusal changed the mailbox: seq %d -> %d", tc.name, before, after)
		}
	}
	multi := with(func(c *mailbox.AgentCard) {
		c.Description = "Writes Go.\n\nReviews:\n\t- tests\n\t- docs"
		c.Skills[0].Description = "one\ntwo"
		c.Skills[0].Examples = []string{"fix\tthis"}
	})
	if _, err := it.native.RegisterAgent(it.ctx, "coder@local", multi); err != nil {
		t.Fatalf("a card with multi-line descriptions: %v", err)
	}
	r := do(t, mustRequest(t, "GET", it.base+"/agents/coder@local/.well-known/agent-card.json"), nil)
	var served struct {
		Description string `json:"description"`
		Skills      []struct {
			Description string   `json:"description"`
			Examples    []string `json:"examples"`
		} `json:"skills"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &served) != nil || served.Description != multi.Description ||
		served.Skills[0].Description != "one\ntwo" || served.Skills[0].Examples[0] != "fix\tthis" {
		t.Fatalf("served card %s; want the descriptions as registered", r.body)
	}
}

// A log written before cards were checked for control characters still
// replays: replay applies what the log holds and never checks it again.
func TestOldLogWithAControlCharacterCardReplays(t *testing.T) {
	dir := t.TempDir()
	body := `{"seq":1,"at_ms":1735689600000,"type":"agent_registered","principal":"oncall","agent":"old@local","card":{"name":"Old\u001b[31m\u202eagent","description":"a\r\nb\u0000","version":"","skills":[{"id":"legacy","name":"","description":"","tags":[],"examples":[]}],"default_input_modes":[],"default_output_modes":[]}}`
	daemontest.WriteLog(t, dir, body)
	it := newInterop(t, daemontest.Options{Dir: dir})
	r := do(t, mustRequest(t, "GET", it.base+"/agents/old@local/.well-known/agent-card.json"), nil)
	var served struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Skills      []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"skills"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &served) != nil || served.Name != "Old\x1b[31m\u202eagent" || served.Description != "a\r\nb\x00" ||
		len(served.Skills) != 1 || served.Skills[0].Name != "legacy" {
		t.Fatalf("the old card after replay: %d %s", r.status, r.body)
	}
	// Registering the same text anew is refused.
	_, err := it.native.RegisterAgent(it.ctx, "old@local", mailbox.AgentCard{Name: served.Name})
	if mailbox.ErrorCode(err) != mailbox.CodeInvalid {
		t.Fatalf("registering the old card's name anew: %v; want a refusal", err)
	}
}

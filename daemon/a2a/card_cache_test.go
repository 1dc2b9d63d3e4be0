package a2a_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// The card's Last-Modified is when the agent was last registered (by the
// mailbox's clock, which stamps registrations), to the second; a card
// registered anew has a later one. If-Modified-Since no earlier than it
// is 304, unless If-None-Match is there, which decides alone (RFC 9110
// 13.2.2). A card registered within the current second has no
// Last-Modified yet, since it could change again within that second.
func TestCardLastModified(t *testing.T) {
	var nowMs atomic.Int64
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 250e6, time.UTC)
	nowMs.Store(t0.UnixMilli())
	at := func(d time.Duration) { nowMs.Store(t0.Add(d).UnixMilli()) }
	it := newInterop(t, daemontest.Options{Now: func() time.Time { return time.UnixMilli(nowMs.Load()) }})
	at(time.Second) // the edge started at t0
	base := it.register("coder@local")
	url := base + ".well-known/agent-card.json"
	type answer struct {
		status int
		h      http.Header
		body   []byte
	}
	get := func(headers map[string]string) answer {
		t.Helper()
		req := mustRequest(t, "GET", url)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, resp.Header, b}
	}
	date := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }

	// Registered at t0+1.25s, read within that second: no Last-Modified,
	// and If-Modified-Since is not trusted.
	if a := get(map[string]string{"If-Modified-Since": date(time.Hour)}); a.status != 200 || a.h.Get("Last-Modified") != "" {
		t.Fatalf("a card registered this second: %d, Last-Modified %q; want 200 without one", a.status, a.h.Get("Last-Modified"))
	}
	at(5 * time.Second)
	a := get(nil)
	lm, etag := a.h.Get("Last-Modified"), a.h.Get("ETag")
	if a.status != 200 || lm != date(time.Second) || a.h.Get("Cache-Control") != "max-age=60" {
		t.Fatalf("the card: %d, Last-Modified %q, Cache-Control %q; want 200, %q (its registration, to the second), max-age=60",
			a.status, lm, a.h.Get("Cache-Control"), date(time.Second))
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"If-Modified-Since its Last-Modified", map[string]string{"If-Modified-Since": lm}, 304},
		{"If-Modified-Since later", map[string]string{"If-Modified-Since": date(time.Minute)}, 304},
		{"If-Modified-Since earlier", map[string]string{"If-Modified-Since": date(0)}, 200},
		{"If-Modified-Since not a date", map[string]string{"If-Modified-Since": "yesterday"}, 200},
		{"If-Modified-Since in RFC 850 form", map[string]string{"If-Modified-Since": t0.Add(time.Minute).Format(time.RFC850)}, 304},
		{"If-None-Match stale, If-Modified-Since current", map[string]string{"If-None-Match": `"stale"`, "If-Modified-Since": lm}, 200},
		{"If-None-Match current, If-Modified-Since earlier", map[string]string{"If-None-Match": etag, "If-Modified-Since": date(0)}, 304},
	} {
		a := get(tc.headers)
		if a.status != tc.status {
			t.Errorf("%s: %d; want %d", tc.name, a.status, tc.status)
		}
		if a.status == 304 && (len(a.body) != 0 || a.h.Get("Last-Modified") != lm || a.h.Get("ETag") != etag || a.h.Get("Cache-Control") != "max-age=60") {
			t.Errorf("%s: 304 with %q, Last-Modified %q, ETag %q, Cache-Control %q; want no body and the 200's validators and policy",
				tc.name, a.body, a.h.Get("Last-Modified"), a.h.Get("ETag"), a.h.Get("Cache-Control"))
		}
	}

	// Registered anew five minutes later: a new Last-Modified, and the old
	// one revalidates to the new card.
	at(5 * time.Minute)
	if _, err := it.native.RegisterAgent(it.ctx, "coder@local", mailbox.AgentCard{Name: "Coder", Description: "now writes Rust"}); err != nil {
		t.Fatal(err)
	}
	at(5*time.Minute + 3*time.Second)
	a = get(map[string]string{"If-Modified-Since": lm})
	var card struct{ Description string }
	if a.status != 200 || json.Unmarshal(a.body, &card) != nil || card.Description != "now writes Rust" || a.h.Get("Last-Modified") != date(5*time.Minute) {
		t.Fatalf("after registering anew, If-Modified-Since the old: %d, Last-Modified %q, %s; want 200, %q, the new card",
			a.status, a.h.Get("Last-Modified"), a.body, date(5*time.Minute))
	}
	if a := get(map[string]string{"If-Modified-Since": a.h.Get("Last-Modified")}); a.status != 304 {
		t.Errorf("If-Modified-Since the new Last-Modified: %d; want 304", a.status)
	}

	// A restart (other tokens, other card settings could change the card
	// without a registration): Last-Modified is never earlier than the
	// edge's start.
	at(time.Hour)
	it.d.Restart()
	at(time.Hour + 2*time.Second)
	if a := get(map[string]string{"If-Modified-Since": date(5 * time.Minute)}); a.status != 200 || a.h.Get("Last-Modified") != date(time.Hour) {
		t.Errorf("after a restart: %d, Last-Modified %q; want 200, %q (the start)", a.status, a.h.Get("Last-Modified"), date(time.Hour))
	}
}

// With tokens the card declares its bearer scheme (v1.0 securitySchemes,
// v0.3 securitySchemes and security) but leaves out securityRequirements,
// which a2a-go v2.3.1 cannot parse, unless a2a_card_security_requirements
// asks for it; without tokens it declares none of them.
func TestCardSecurityRequirementsByConfig(t *testing.T) {
	type served struct {
		SecuritySchemes      map[string]map[string]any `json:"securitySchemes"`
		Security             []map[string][]string     `json:"security"`
		SecurityRequirements json.RawMessage           `json:"securityRequirements"`
	}
	read := func(t *testing.T, opts daemontest.Options) served {
		t.Helper()
		it := newInterop(t, opts)
		base := it.register("coder@local")
		r := do(t, mustRequest(t, "GET", base+".well-known/agent-card.json"), nil)
		var c served
		if r.status != 200 || json.Unmarshal(r.body, &c) != nil {
			t.Fatalf("card: %d %s", r.status, r.body)
		}
		return c
	}
	c := read(t, daemontest.Options{Tokens: edgeTokens})
	if b := c.SecuritySchemes["bearer"]; b["scheme"] != "bearer" || b["httpAuthSecurityScheme"] == nil || len(c.Security) != 1 || c.SecurityRequirements != nil {
		t.Errorf("with tokens, by default: %+v; want the bearer scheme in both forms, security, and no securityRequirements", c)
	}
	c = read(t, daemontest.Options{Tokens: edgeTokens, Config: func(cfg *config.Config) { cfg.A2ACardSecurityRequirements = true }})
	if c.SecuritySchemes["bearer"] == nil || len(c.Security) != 1 || string(c.SecurityRequirements) != `[{"schemes":{"bearer":{"list":[]}}}]` {
		t.Errorf("with tokens and a2a_card_security_requirements: %+v (%s); want securityRequirements too", c, c.SecurityRequirements)
	}
	c = read(t, daemontest.Options{Config: func(cfg *config.Config) { cfg.A2ACardSecurityRequirements = true }})
	if c.SecuritySchemes != nil || c.Security != nil || c.SecurityRequirements != nil {
		t.Errorf("without tokens: %+v; want no security at all", c)
	}
}

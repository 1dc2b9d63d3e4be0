package a2a_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mailbox"
)

// The card has a validator of its content and a policy that lets a client
// keep it and revalidate: If-None-Match with its ETag is 304 until the
// card is registered anew.
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
	if r.status != 200 || len(etag) < 3 || etag[0] != '"' || h.Get("Cache-Control") != "no-cache" || r.ctype != "application/json" {
		t.Fatalf("card: %d, ETag %q, Cache-Control %q, %s; want 200 with an ETag and no-cache", r.status, etag, h.Get("Cache-Control"), r.ctype)
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

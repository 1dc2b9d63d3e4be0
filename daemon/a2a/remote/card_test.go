package remote_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/daemon/a2a/remote/clienttest"
	"github.com/mailroom/mailroom/mailbox"
)

// Card resolution: where the card is read, and which binding is chosen.

// cardServer serves the given paths (a body, or a status with "!500"),
// recording every path asked for; anything else is 404.
type cardServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	asked []string
}

func serveCards(t *testing.T, paths map[string]string) *cardServer {
	t.Helper()
	c := &cardServer{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.asked = append(c.asked, r.URL.Path)
		c.mu.Unlock()
		body, ok := paths[r.URL.Path]
		switch {
		case !ok:
			http.NotFound(w, r)
		case body == "!500":
			// A failing server that echoes the request's credentials.
			http.Error(w, "upstream broke; Authorization was "+r.Header.Get("Authorization")+" and X-Api-Key "+r.Header.Get("X-Api-Key"), http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(strings.ReplaceAll(body, "BASE", "http://"+r.Host)))
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *cardServer) paths() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.asked, ",")
}

const (
	card03 = `{"name":"Old","description":"v0.3 only","version":"1","protocolVersion":"0.3.0","url":"BASE/rpc03","preferredTransport":"JSONRPC",
		"capabilities":{"streaming":true},"skills":[{"id":"s1","name":"","description":"d","tags":["t"],"examples":["e"]}]}`
	card10 = `{"name":"New","description":"both","version":"2","capabilities":{"streaming":false},"skills":[],
		"supportedInterfaces":[{"url":"BASE/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},{"url":"BASE/rpc10","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"BASE/rpc03","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],
		"protocolVersion":"0.3.0","url":"BASE/rpc03"}`
	card10rest = `{"name":"Rest","description":"rest and old","supportedInterfaces":[{"url":"BASE/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},{"url":"BASE/rpc03","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`
	cardGRPC   = `{"name":"Grpc","description":"grpc only","supportedInterfaces":[{"url":"BASE:9000","protocolBinding":"GRPC","protocolVersion":"1.0"}],
		"protocolVersion":"0.3.0","url":"BASE:9000","preferredTransport":"GRPC"}`
)

func TestRemoteCardResolution(t *testing.T) {
	ctx := clienttest.Ctx(t)
	cases := []struct {
		name      string
		paths     map[string]string
		url       string // under the server; "" is the base
		binding   string
		want      string // binding chosen
		endpoint  string // under the server
		cardName  string
		asked     string
		streaming bool
	}{
		{name: "agent-card.json, v0.3", paths: map[string]string{"/.well-known/agent-card.json": card03},
			want: mailbox.BindingJSONRPC03, endpoint: "/rpc03", cardName: "Old", asked: "/.well-known/agent-card.json", streaming: true},
		{name: "the agent.json fallback", paths: map[string]string{"/a/.well-known/agent.json": card03}, url: "/a",
			want: mailbox.BindingJSONRPC03, endpoint: "/rpc03", cardName: "Old", asked: "/a/.well-known/agent-card.json,/a/.well-known/agent.json", streaming: true},
		{name: "a card URL given", paths: map[string]string{"/cards/new.json": card10}, url: "/cards/new.json",
			want: mailbox.BindingJSONRPC10, endpoint: "/rpc10", cardName: "New", asked: "/cards/new.json"},
		{name: "a well-known card URL given", paths: map[string]string{"/x/.well-known/agent.json": card10}, url: "/x/.well-known/agent.json",
			want: mailbox.BindingJSONRPC10, endpoint: "/rpc10", cardName: "New", asked: "/x/.well-known/agent.json"},
		{name: "v1.0 prefers JSON-RPC", paths: map[string]string{"/.well-known/agent-card.json": card10},
			want: mailbox.BindingJSONRPC10, endpoint: "/rpc10", cardName: "New"},
		{name: "v1.0 HTTP+JSON before v0.3", paths: map[string]string{"/.well-known/agent-card.json": card10rest},
			want: mailbox.BindingHTTPJSON10, endpoint: "/rest", cardName: "Rest"},
		{name: "binding forced to v0.3", paths: map[string]string{"/.well-known/agent-card.json": card10}, binding: mailbox.BindingJSONRPC03,
			want: mailbox.BindingJSONRPC03, endpoint: "/rpc03", cardName: "New"},
		{name: "binding forced to HTTP+JSON", paths: map[string]string{"/.well-known/agent-card.json": card10}, binding: mailbox.BindingHTTPJSON10,
			want: mailbox.BindingHTTPJSON10, endpoint: "/rest", cardName: "New"},
		{name: "a forced binding the card lacks is called at the base", paths: map[string]string{"/b/.well-known/agent-card.json": card03}, url: "/b/", binding: mailbox.BindingJSONRPC10,
			want: mailbox.BindingJSONRPC10, endpoint: "/b/", cardName: "Old", streaming: true},
		{name: "legacy with a card", paths: map[string]string{"/.well-known/agent.json": card03}, binding: mailbox.BindingLegacy,
			want: mailbox.BindingLegacy, endpoint: "", cardName: "Old"},
		{name: "legacy without a card", paths: map[string]string{}, url: "/g", binding: mailbox.BindingLegacy,
			want: mailbox.BindingLegacy, endpoint: "/g", cardName: ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := serveCards(t, c.paths)
			r, card, err := remote.Resolve(ctx, nil, remote.Spec{URL: s.srv.URL + c.url, Binding: c.binding}, remote.Auth{})
			if err != nil {
				t.Fatalf("ResolveRemote: %v", err)
			}
			if card.Binding != c.want || card.Endpoint != s.srv.URL+c.endpoint || card.Name != c.cardName || card.Streaming != c.streaming || r.Binding() != c.want {
				t.Fatalf("card %+v; want binding %s at %s, name %q, streaming %v", card, c.want, s.srv.URL+c.endpoint, c.cardName, c.streaming)
			}
			if c.asked != "" && s.paths() != c.asked {
				t.Fatalf("asked for %s, want %s", s.paths(), c.asked)
			}
			if c.cardName == "Old" && (len(card.Skills) != 1 || card.Skills[0].Name != "s1" || card.Skills[0].Tags[0] != "t" || card.Skills[0].Examples[0] != "e") {
				t.Fatalf("skills %+v, want s1 named by its id, with its tags and examples", card.Skills)
			}
		})
	}
}

func TestRemoteCardRefusals(t *testing.T) {
	ctx := clienttest.Ctx(t)
	auth := remote.Auth{Bearer: "tok-very-secret", Header: "X-Api-Key", Value: "hdr-very-secret"}
	cases := []struct {
		name    string
		paths   map[string]string
		url     string
		binding string
		kind    remote.ErrorKind
		says    []string
	}{
		{name: "gRPC only", paths: map[string]string{"/.well-known/agent-card.json": cardGRPC},
			kind: remote.Unusable, says: []string{"gRPC is not supported", "GRPC 1.0 at http://"}},
		{name: "no card at all", paths: map[string]string{},
			kind: remote.Refused, says: []string{"agent.json", "404"}},
		{name: "not a card", paths: map[string]string{"/.well-known/agent-card.json": `<html>hello</html>`},
			kind: remote.Malformed, says: []string{"not a JSON agent card", "<html>hello"}},
		{name: "a failing server", paths: map[string]string{"/.well-known/agent-card.json": "!500"},
			kind: remote.Transport, says: []string{"500", "upstream broke", "[redacted]"}},
		{name: "an unknown binding", paths: map[string]string{}, binding: "grpc",
			kind: remote.Unusable, says: []string{"gRPC is not supported"}},
		{name: "not a URL", url: "ftp://example", kind: remote.Unusable, says: []string{"not an http or https URL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := c.url
			if u == "" {
				u = serveCards(t, c.paths).srv.URL
			}
			_, _, err := remote.Resolve(ctx, nil, remote.Spec{URL: u, Binding: c.binding}, auth)
			var re *remote.Error
			if !errors.As(err, &re) || re.Kind != c.kind {
				t.Fatalf("ResolveRemote: %v; want a %s error", err, c.kind)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "very-secret") {
				t.Errorf("error %q shows a credential", err)
			}
			if re.Retryable() != (c.kind == remote.Transport) {
				t.Errorf("Retryable() = %v for a %s error", re.Retryable(), c.kind)
			}
		})
	}
}

func TestRemoteCredentialsNeverShown(t *testing.T) {
	ctx := clienttest.Ctx(t)
	auth := remote.Auth{Bearer: "tok-very-secret", Header: "X-Api-Key", Value: "hdr-very-secret"}
	s := serveCards(t, map[string]string{"/.well-known/agent-card.json": card03, "/rpc03": "!500"})
	r, card, err := remote.Resolve(ctx, nil, remote.Spec{URL: s.srv.URL}, auth)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Get(ctx, "t1")
	if !remote.Retryable(err) || !strings.Contains(err.Error(), "[redacted]") || strings.Contains(err.Error(), "very-secret") {
		t.Fatalf("Get from a failing server that echoes credentials: %v; want a retryable error without them", err)
	}
	// A remote that is not there: a transport error, retryable.
	s.srv.Close()
	_, err = r.Get(ctx, "t1")
	if !remote.Retryable(err) || strings.Contains(err.Error(), "very-secret") {
		t.Fatalf("Get from a closed server: %v; want a retryable transport error", err)
	}
	for _, shown := range []string{fmt.Sprint(auth), fmt.Sprintf("%+v", auth), fmt.Sprintf("%#v", auth), fmt.Sprintf("%+v", r), fmt.Sprintf("%+v", card)} {
		if strings.Contains(shown, "very-secret") {
			t.Fatalf("printing shows a credential: %s", shown)
		}
	}
}

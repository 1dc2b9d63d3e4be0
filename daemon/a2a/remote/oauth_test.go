package remote_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/mailroom/mailroom/daemon/a2a/remote"
	"github.com/mailroom/mailroom/internal/testpki"
)

// oauthCardServer serves card as the agent card of a v0.3 remote at its root.
func oauthCardServer(t *testing.T, card map[string]any) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		card["url"] = srv.URL + "/"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(card)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The OAuth 2.0 client credentials flow a card declares, in either
// generation's spelling, with the scopes its requirements name; a card
// whose schemes this client cannot read is still resolved, without one.
func TestRemoteCardOAuthFlow(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		c := map[string]any{"name": "x", "description": "d", "version": "1", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
			"capabilities": map[string]any{}, "skills": []any{}}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	flow := map[string]any{"clientCredentials": map[string]any{"tokenUrl": "https://idp.example/token", "scopes": map[string]string{"a2a.send": "", "a2a.read": ""}}}
	for _, tc := range []struct {
		name string
		card map[string]any
		want *remote.OAuthFlow
	}{
		{"v0.3", base(map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}, "idp": map[string]any{"type": "oauth2", "flows": flow}},
			"security":        []any{map[string][]string{"idp": {"a2a.send"}}, map[string][]string{"bearer": {}}}}),
			&remote.OAuthFlow{Scheme: "idp", TokenURL: "https://idp.example/token", Scopes: []string{"a2a.send"}}},
		{"v1.0", base(map[string]any{
			"securitySchemes":      map[string]any{"idp": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": flow}}},
			"securityRequirements": []any{map[string]any{"schemes": map[string]any{"idp": map[string]any{"list": []string{"a2a.send", "a2a.read"}}}}}}),
			&remote.OAuthFlow{Scheme: "idp", TokenURL: "https://idp.example/token", Scopes: []string{"a2a.send", "a2a.read"}}},
		{"no requirement: no scope", base(map[string]any{
			"securitySchemes": map[string]any{"idp": map[string]any{"type": "oauth2", "flows": flow}}}),
			&remote.OAuthFlow{Scheme: "idp", TokenURL: "https://idp.example/token"}},
		{"authorization code only", base(map[string]any{
			"securitySchemes": map[string]any{"idp": map[string]any{"type": "oauth2", "flows": map[string]any{"authorizationCode": map[string]any{"tokenUrl": "https://idp.example/token"}}}}}),
			nil},
		{"schemes it cannot read", base(map[string]any{"securitySchemes": map[string]any{"odd": "a string"}, "security": "nonsense"}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := oauthCardServer(t, tc.card)
			_, card, err := remote.Resolve(t.Context(), nil, remote.Spec{URL: srv.URL}, remote.Auth{})
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			got, want := card.OAuth, tc.want
			if (got == nil) != (want == nil) || got != nil && (got.Scheme != want.Scheme || got.TokenURL != want.TokenURL || !slices.Equal(got.Scopes, want.Scopes)) {
				t.Fatalf("card's OAuth flow = %+v, want %+v", got, want)
			}
		})
	}
}

// A call refused at the TLS handshake, by either side, or never sent,
// surely did not reach the remote: a send that failed so is tried again,
// never settled as one it may hold.
func TestRemoteHandshakeRefusedWasNotReceived(t *testing.T) {
	ca := testpki.NewCA(t, "remote CA")
	leaf := ca.Issue(t, testpki.Options{})
	for _, tc := range []struct {
		name   string
		server *tls.Config
		client *tls.Config
	}{
		{"unknown authority", &tls.Config{Certificates: []tls.Certificate{leaf.TLS}}, nil},
		{"client certificate required", &tls.Config{Certificates: []tls.Certificate{leaf.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()},
			&tls.Config{RootCAs: ca.Pool()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.NotFoundHandler())
			srv.TLS = tc.server
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc.client}}
			_, _, err := remote.Resolve(t.Context(), hc, remote.Spec{URL: srv.URL}, remote.Auth{})
			if err == nil || remote.MayHaveReceived(err) || !remote.Retryable(err) {
				t.Fatalf("Resolve = %v; want a transport error that surely did not reach the remote", err)
			}
		})
	}
	if remote.MayHaveReceived(fmt.Errorf("wrapped: %w", notSent{})) {
		t.Errorf("an error matching ErrNotSent may have been received, want not")
	}
}

type notSent struct{}

func (notSent) Error() string        { return "no token" }
func (notSent) Is(target error) bool { return errors.Is(target, remote.ErrNotSent) }

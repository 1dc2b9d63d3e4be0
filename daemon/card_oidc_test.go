package daemon_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A daemon that accepts an issuer's OIDC tokens says so in every card:
// the issuer's discovery URL as an OpenID Connect scheme, beside the
// bearer scheme its tokens are sent as.
func TestCardDeclaresOIDCIssuer(t *testing.T) {
	s := startOIDC(t, time.Minute)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, s.d.URL()+"/a2a/agents/coder@local", strings.NewReader(`{"name":"Coder","description":"writes code"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer op-secret")
	resp, err := s.d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("registering: %s", resp.Status)
	}
	resp, err = s.d.Client().Get(s.d.URL() + "/agents/coder@local/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		SecuritySchemes map[string]struct {
			Type             string `json:"type"`
			OpenIDConnectURL string `json:"openIdConnectUrl"`
			V1               *struct {
				OpenIDConnectURL string `json:"openIdConnectUrl"`
			} `json:"openIdConnectSecurityScheme"`
		} `json:"securitySchemes"`
		Security []map[string][]string `json:"security"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	want := s.issuer.srv.URL + "/.well-known/openid-configuration"
	oidc := card.SecuritySchemes["oidc"]
	if oidc.Type != "openIdConnect" || oidc.OpenIDConnectURL != want || oidc.V1 == nil || oidc.V1.OpenIDConnectURL != want {
		t.Errorf("the card's oidc scheme %+v; want openIdConnect at %s in both generations' shapes", oidc, want)
	}
	if card.SecuritySchemes["bearer"].Type != "http" || len(card.Security) != 2 {
		t.Errorf("the card's schemes %+v, security %v; want bearer and oidc as alternatives", card.SecuritySchemes, card.Security)
	}
}

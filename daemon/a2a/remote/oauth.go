package remote

import (
	"encoding/json"
	"slices"
	"sort"
)

// What a remote's card says of OAuth 2.0: the client credentials flow,
// the one a daemon (a machine, with no user to send to a login page) can
// take. The card's security schemes are read leniently: a card whose
// schemes this client does not understand is still a card, called with
// the configured credentials alone.

// OAuthFlow is the OAuth 2.0 client credentials flow a remote's card
// declares: the scheme's name, the token URL, and the scopes its
// security requirements ask of that scheme.
type OAuthFlow struct {
	Scheme   string   `json:"scheme"`
	TokenURL string   `json:"token_url"`
	Scopes   []string `json:"scopes,omitempty"`
}

// cardSecurity is the part of both generations' card that says how to
// authenticate: securitySchemes (v0.3: {"type": "oauth2", "flows": ...};
// v1.0: {"oauth2SecurityScheme": {"flows": ...}}), and the requirements
// (v0.3 security: [{scheme: [scopes]}]; v1.0 securityRequirements:
// [{"schemes": {scheme: {"list": [scopes]}}}]). Every field is raw, so a
// scheme this client does not know never makes the card unreadable.
type cardSecurity struct {
	SecuritySchemes      map[string]json.RawMessage `json:"securitySchemes"`
	Security             json.RawMessage            `json:"security"`
	SecurityRequirements json.RawMessage            `json:"securityRequirements"`
}

// oauthScheme is an OAuth 2.0 scheme in either generation's spelling.
type oauthScheme struct {
	Type   string      `json:"type"`
	Flows  *oauthFlows `json:"flows"`
	Nested *struct {
		Flows *oauthFlows `json:"flows"`
	} `json:"oauth2SecurityScheme"`
}

type oauthFlows struct {
	ClientCredentials *struct {
		TokenURL string `json:"tokenUrl"`
	} `json:"clientCredentials"`
}

// clientCredentials is the first scheme (by name) that declares a client
// credentials flow with a token URL, or nil.
func (s cardSecurity) clientCredentials() *OAuthFlow {
	names := make([]string, 0, len(s.SecuritySchemes))
	for name := range s.SecuritySchemes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var sc oauthScheme
		if json.Unmarshal(s.SecuritySchemes[name], &sc) != nil {
			continue
		}
		flows := sc.Flows
		if sc.Nested != nil {
			flows = sc.Nested.Flows
		} else if sc.Type != "oauth2" {
			continue
		}
		if flows == nil || flows.ClientCredentials == nil || flows.ClientCredentials.TokenURL == "" {
			continue
		}
		return &OAuthFlow{Scheme: name, TokenURL: flows.ClientCredentials.TokenURL, Scopes: s.scopes(name)}
	}
	return nil
}

// scopes are the scopes the card's requirements ask of scheme, in the
// order first seen: none when they name none (the token endpoint's
// default).
func (s cardSecurity) scopes(scheme string) []string {
	var out []string
	add := func(list []string) {
		for _, sc := range list {
			if sc != "" && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	var v03 []map[string][]string
	if json.Unmarshal(s.Security, &v03) == nil {
		for _, req := range v03 {
			add(req[scheme])
		}
	}
	var v10 []struct {
		Schemes map[string]json.RawMessage `json:"schemes"`
	}
	if json.Unmarshal(s.SecurityRequirements, &v10) == nil {
		for _, req := range v10 {
			var list struct {
				List []string `json:"list"`
			}
			var plain []string
			if raw, ok := req.Schemes[scheme]; ok {
				if json.Unmarshal(raw, &list) == nil {
					add(list.List)
				} else if json.Unmarshal(raw, &plain) == nil {
					add(plain)
				}
			}
		}
	}
	return out
}

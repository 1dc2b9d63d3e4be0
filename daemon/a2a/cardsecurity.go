package a2a

import (
	"strings"

	"github.com/mailroom/mailroom/daemon/a2a/cardsig"
)

// CardOptions say what every card declares beyond the agent's
// registration: how the daemon authenticates its callers, and the key
// that signs it. The daemon fills them from its configuration, so a card
// declares exactly the ways in that are in force.
type CardOptions struct {
	// Signer signs every card (card_signing_key_file); nil serves them
	// unsigned. Its public key is served as a JWKS at JWKSPath.
	Signer *cardsig.Signer
	// MutualTLS is the daemon's client certificate mode, "request" or
	// "require" (tls_client_auth); "" takes no client certificate.
	MutualTLS string
	// OIDCIssuer is the issuer whose tokens the daemon accepts
	// (oidc_issuer); "" accepts none. The card gives its discovery URL.
	OIDCIssuer string
	// NoBearer, with Authenticate set, says the daemon takes no bearer
	// token at all (no tokens, no OIDC issuer): only certificates.
	NoBearer bool
}

// JWKSPath is where, under an agent's base URL, the public keys that
// verify its card's signatures are served.
const JWKSPath = ".well-known/jwks.json"

// The names the card gives the schemes, as its security requirements
// cite them.
const (
	schemeBearer = "bearer"
	schemeMTLS   = "mtls"
	schemeOIDC   = "oidc"
)

// MutualTLS modes: the client certificate asked for, or required.
const (
	MutualTLSRequest = "request"
	MutualTLSRequire = "require"
)

// securitySchemes are the schemes in force, each in both generations'
// shapes side by side (v0.3: OpenAPI's, with type; v1.0: the proto's
// oneof, one member named for the scheme's kind), and the requirements
// that cite them, each an alternative: any one of them lets a caller in.
// None when the daemon authenticates no one.
func (e *Edge) securitySchemes() (schemes obj, alternatives []string) {
	if e.opts.Authenticate == nil {
		return nil, nil
	}
	c := e.opts.Card
	schemes = obj{}
	if !c.NoBearer {
		desc := "a Mailroom token (mailroom token new)"
		if c.OIDCIssuer != "" {
			desc += ", or an OpenID Connect token of " + c.OIDCIssuer
		}
		schemes[schemeBearer] = obj{"type": "http", "scheme": "bearer", "description": desc,
			"httpAuthSecurityScheme": obj{"scheme": "Bearer", "description": desc}}
		alternatives = append(alternatives, schemeBearer)
	}
	if c.OIDCIssuer != "" {
		discovery := strings.TrimSuffix(c.OIDCIssuer, "/") + "/.well-known/openid-configuration"
		desc := "an OpenID Connect token of " + c.OIDCIssuer + ", sent as a bearer token"
		schemes[schemeOIDC] = obj{"type": "openIdConnect", "openIdConnectUrl": discovery, "description": desc,
			"openIdConnectSecurityScheme": obj{"openIdConnectUrl": discovery, "description": desc}}
		alternatives = append(alternatives, schemeOIDC)
	}
	if c.MutualTLS != "" {
		desc := "a client certificate the daemon's access file maps to a principal"
		schemes[schemeMTLS] = obj{"type": "mutualTLS", "description": desc,
			"mtlsSecurityScheme": obj{"description": desc}}
		if c.MutualTLS == MutualTLSRequire {
			// Every connection carries a certificate, or is refused
			// before a request is read.
			alternatives = []string{schemeMTLS}
		} else {
			alternatives = append(alternatives, schemeMTLS)
		}
	}
	return schemes, alternatives
}

// declareSecurity writes the schemes in force into the card out.
func (e *Edge) declareSecurity(out obj) {
	schemes, alternatives := e.securitySchemes()
	if schemes == nil {
		return
	}
	out["securitySchemes"] = schemes
	security := make([]obj, len(alternatives))
	requirements := make([]obj, len(alternatives))
	for i, name := range alternatives {
		security[i] = obj{name: []string{}}
		requirements[i] = obj{"schemes": obj{name: obj{"list": []string{}}}}
	}
	out["security"] = security
	if e.opts.CardSecurityRequirements {
		// The A2A 1.0 JSON form, which a2a-go v2.3.1's parser refuses
		// (a2aproject/a2a-go#430): served only when configured.
		out["securityRequirements"] = requirements
	}
}

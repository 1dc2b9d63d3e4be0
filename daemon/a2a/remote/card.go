package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
	"github.com/mailroom/mailroom/mailbox"
)

// Finding a remote agent: its card, and the binding to call it by.

// Spec says where a remote agent is and how to call it.
type Spec struct {
	// URL is the agent's base URL, or its card's URL
	// (.../.well-known/agent-card.json or agent.json). For the legacy
	// binding it is the base the dialect appends /rpc to.
	URL string
	// Binding is one of mailbox's Binding constants; "" is mailbox.BindingAuto.
	Binding string
	// RequireSignedCard has every card read verified against CardJWKS
	// (a JWKS as JSON text) or the JWKS at CardJWKSURL: one that does not
	// verify is an error wrapping ErrCardNotVerified (cardverify.go).
	RequireSignedCard bool
	CardJWKSURL       string
	CardJWKS          string
}

// Auth is the credential sent with every request to a remote: a
// bearer token, or a header and its value, or both. It comes from the
// configuration and is never written to a log or an error; String hides it.
type Auth struct {
	Bearer string
	Header string
	Value  string
}

// String hides the secrets, so printing a Auth by mistake shows none.
func (a Auth) String() string {
	var what []string
	if a.Bearer != "" {
		what = append(what, "bearer [redacted]")
	}
	if a.Header != "" {
		what = append(what, a.Header+": [redacted]")
	}
	if len(what) == 0 {
		return "no credentials"
	}
	return strings.Join(what, ", ")
}

// GoString hides the secrets from %#v too.
func (a Auth) GoString() string { return "remote.Auth{" + a.String() + "}" }

func (a Auth) apply(h http.Header) {
	if a.Bearer != "" {
		h.Set("Authorization", "Bearer "+a.Bearer)
	}
	if a.Header != "" {
		h.Set(a.Header, a.Value)
	}
}

// Skill is a skill the remote's card lists.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags,omitempty"`
	Examples    []string `json:"examples,omitempty"`
}

// Card is what the daemon learns of a remote from its card, and how
// it calls it. A legacy remote that serves no card has only Binding and
// Endpoint.
type Card struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Version     string  `json:"version,omitempty"`
	Skills      []Skill `json:"skills"`
	// Streaming: the card says the remote streams (capabilities.streaming).
	Streaming bool `json:"streaming"`
	// Binding is the binding chosen (never mailbox.BindingAuto), and Endpoint the
	// URL it is called at: the JSON-RPC URL, the HTTP+JSON base, or the
	// legacy base (without /rpc).
	Binding  string `json:"binding"`
	Endpoint string `json:"endpoint"`
	// CardURL is where the card was read ("" when none was).
	CardURL string `json:"card_url,omitempty"`
	// OAuth is the OAuth 2.0 client credentials flow the card declares
	// (oauth.go), nil when it declares none.
	OAuth *OAuthFlow `json:"oauth,omitempty"`
}

// cardWire is both generations' card, as far as this client reads it.
type cardWire struct {
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	Version      string  `json:"version"`
	Skills       []Skill `json:"skills"`
	Capabilities struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
	// v1.0.
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	// v0.3.
	URL                  string `json:"url"`
	PreferredTransport   string `json:"preferredTransport"`
	ProtocolVersion      string `json:"protocolVersion"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	// Both generations: how to authenticate (oauth.go).
	cardSecurity
}

// cardInterface is one way in that a card offers.
type cardInterface struct {
	url, binding, version string // binding as the card spells it: JSONRPC, HTTP+JSON, GRPC
}

// generation reads a protocol version: "1.0", "0.3" or "" (unknown).
func generation(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	switch {
	case v == "1" || strings.HasPrefix(v, "1."):
		return wire.V10
	case strings.HasPrefix(v, "0."):
		// 0.2 cards are read as 0.3: the wire differs in no field this
		// client sends.
		return wire.V03
	}
	return ""
}

// interfaces lists what the card offers, v1.0 entries first.
func (c cardWire) interfaces() []cardInterface {
	var out []cardInterface
	for _, i := range c.SupportedInterfaces {
		out = append(out, cardInterface{i.URL, strings.ToUpper(i.ProtocolBinding), generation(i.ProtocolVersion)})
	}
	if c.URL != "" {
		v := generation(c.ProtocolVersion)
		if v == "" {
			v = wire.V03
		}
		t := strings.ToUpper(c.PreferredTransport)
		if t == "" {
			t = "JSONRPC"
		}
		out = append(out, cardInterface{c.URL, t, v})
		for _, i := range c.AdditionalInterfaces {
			out = append(out, cardInterface{i.URL, strings.ToUpper(i.Transport), v})
		}
	}
	return out
}

// bindingOf names the binding an interface is, "" when this client does
// not speak it.
func bindingOf(i cardInterface) string {
	switch {
	case i.binding == "JSONRPC" && i.version == wire.V10:
		return mailbox.BindingJSONRPC10
	case i.binding == "HTTP+JSON" && i.version == wire.V10:
		return mailbox.BindingHTTPJSON10
	case i.binding == "JSONRPC" && i.version == wire.V03:
		return mailbox.BindingJSONRPC03
	}
	return ""
}

// preference is the order auto picks in.
var preference = []string{mailbox.BindingJSONRPC10, mailbox.BindingHTTPJSON10, mailbox.BindingJSONRPC03}

// choose picks the interface for binding want (mailbox.BindingAuto: the first of
// preference the card offers).
func (c cardWire) choose(want string) (binding, endpoint string, ok bool) {
	offered := map[string]string{}
	for _, i := range c.interfaces() {
		if b := bindingOf(i); b != "" && i.url != "" {
			if _, seen := offered[b]; !seen {
				offered[b] = i.url
			}
		}
	}
	if want != mailbox.BindingAuto {
		u, ok := offered[want]
		return want, u, ok
	}
	for _, b := range preference {
		if u, ok := offered[b]; ok {
			return b, u, true
		}
	}
	return "", "", false
}

// offers says what a card offers, for an error naming it.
func (c cardWire) offers() string {
	var what []string
	for _, i := range c.interfaces() {
		v := i.version
		if v == "" {
			v = "an unknown version"
		}
		what = append(what, i.binding+" "+v+" at "+i.url)
	}
	if len(what) == 0 {
		return "no interface at all (neither supportedInterfaces nor url)"
	}
	return strings.Join(what, "; ")
}

// Card paths under a base URL: the current name, then the one before.
var cardPaths = []string{".well-known/agent-card.json", ".well-known/agent.json"}

// cardURLs returns the card URLs to try for u, in order, and the agent's
// base URL. A URL that is a card's is tried alone.
func cardURLs(u string) (tries []string, base string, err error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, "", &Error{Kind: Unusable, Op: "resolve", Message: "the remote's URL " + strconv.Quote(redactURL(u)) + " is not an http or https URL"}
	}
	if i := strings.Index(p.Path, "/.well-known/"); i >= 0 || strings.HasSuffix(p.Path, ".json") {
		b := *p
		if i >= 0 {
			b.Path = p.Path[:i+1]
		}
		b.RawQuery = ""
		return []string{u}, b.String(), nil
	}
	base = u
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	if p.RawQuery != "" {
		// A query belongs to the base, not the card: keep the base as
		// given and put the card path before the query.
		b := *p
		b.Path = strings.TrimSuffix(p.Path, "/") + "/"
		b.RawQuery = ""
		base = b.String()
	}
	for _, cp := range cardPaths {
		tries = append(tries, base+cp)
	}
	return tries, u, nil
}

// redactURL drops a URL's user information, should the configuration
// carry a password in it.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

// Resolve reads the remote's card and returns a client for it, with
// what the card says. The card is read at {base}/.well-known/agent-card.json,
// then {base}/.well-known/agent.json; a spec URL that is a card's is read
// as is. With spec.Binding auto, the binding is the card's v1.0 JSON-RPC
// interface, else its v1.0 HTTP+JSON one, else its v0.3 JSON-RPC one; a
// card offering none (gRPC only, v0.3 HTTP+JSON) is refused, naming what
// it offers. A forced binding the card does not list is called at the
// base URL. The legacy binding needs no card: one is read when the remote
// serves it (for its name and skills), and calls go to {base}/rpc. With
// spec.RequireSignedCard the card must be served and verify against the
// spec's keys, or Resolve fails with an error wrapping ErrCardNotVerified.
//
// hc may be nil (http.DefaultClient). Its Timeout, if any, bounds every
// call, streams included: give one without and bound calls with ctx.
func Resolve(ctx context.Context, hc *http.Client, spec Spec, auth Auth) (*Client, Card, error) {
	binding := spec.Binding
	if binding == "" {
		binding = mailbox.BindingAuto
	}
	switch binding {
	case mailbox.BindingAuto, mailbox.BindingJSONRPC03, mailbox.BindingJSONRPC10, mailbox.BindingHTTPJSON10, mailbox.BindingLegacy:
	default:
		return nil, Card{}, &Error{Kind: Unusable, Op: "resolve",
			Message: "binding " + strconv.Quote(binding) + " is not one this client speaks; expected auto, jsonrpc-0.3, jsonrpc-1.0, http+json-1.0 or legacy (gRPC is not supported)"}
	}
	tries, base, err := cardURLs(spec.URL)
	if err != nil {
		return nil, Card{}, err
	}
	c := &Client{hc: hc, auth: &auth}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	cw, cardURL, body, err := c.fetchCard(ctx, tries)
	if err != nil {
		var re *Error
		legacyWithoutCard := binding == mailbox.BindingLegacy && errors.As(err, &re) && re.Kind == Refused
		if !legacyWithoutCard || spec.RequireSignedCard {
			return nil, Card{}, err
		}
	}
	if spec.RequireSignedCard {
		if err := c.verifyCard(ctx, spec, cardURL, body); err != nil {
			return nil, Card{}, err
		}
	}
	card := Card{Name: cw.Name, Description: cw.Description, Version: cw.Version, Skills: cw.Skills,
		Streaming: cw.Capabilities.Streaming, CardURL: cardURL, OAuth: cw.clientCredentials()}
	if card.Skills == nil {
		card.Skills = []Skill{}
	}
	for i, s := range card.Skills {
		if s.Name == "" {
			card.Skills[i].Name = s.ID
		}
	}
	switch binding {
	case mailbox.BindingLegacy:
		// The dialect has no streaming, whatever a card says.
		card.Binding, card.Endpoint, card.Streaming = mailbox.BindingLegacy, base, false
	default:
		b, endpoint, ok := cw.choose(binding)
		switch {
		case ok:
			card.Binding, card.Endpoint = b, endpoint
		case binding != mailbox.BindingAuto:
			card.Binding, card.Endpoint = binding, base
		default:
			return nil, card, &Error{Kind: Unusable, Op: "resolve",
				Message: "the card at " + redactURL(cardURL) + " offers " + cw.offers() +
					"; this client speaks JSON-RPC (v1.0 and v0.3) and HTTP+JSON (v1.0) only: gRPC is not supported. Serve one of those, or register the agent with --binding legacy if it speaks tasks/send"}
		}
	}
	if _, err := url.Parse(card.Endpoint); err != nil || !strings.HasPrefix(card.Endpoint, "http") {
		return nil, card, &Error{Kind: Malformed, Op: "resolve", Message: "the card's interface URL " + strconv.Quote(redactURL(card.Endpoint)) + " is not an http or https URL"}
	}
	r, err := New(hc, card, auth)
	return r, card, err
}

// fetchCard reads the first card of tries that exists, and returns it
// read and as it came. A 404 moves on to the next; anything else is the
// answer.
func (c *Client) fetchCard(ctx context.Context, tries []string) (cardWire, string, []byte, error) {
	var last error
	for _, u := range tries {
		body, err := c.get(ctx, "GET card", u)
		if err != nil {
			var re *Error
			if errors.As(err, &re) && re.HTTPStatus == http.StatusNotFound {
				last = err
				continue
			}
			return cardWire{}, u, nil, err
		}
		var cw cardWire
		if err := json.Unmarshal(body, &cw); err != nil || !wire.IsObject(body) {
			return cardWire{}, u, nil, &Error{Kind: Malformed, Op: "GET card",
				Message: "the card at " + redactURL(u) + " is not a JSON agent card: " + c.auth.excerpt(body)}
		}
		return cw, u, body, nil
	}
	return cardWire{}, "", nil, last
}

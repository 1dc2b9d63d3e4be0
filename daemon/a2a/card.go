package a2a

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"

	"github.com/mailroom/mailroom/daemon/a2a/wire"
)

// card serves the agent's card at .well-known/agent-card.json (and the
// older .well-known/agent.json). One card serves both generations: v1.0
// clients read supportedInterfaces, v0.3 clients url, preferredTransport,
// protocolVersion and additionalInterfaces, and each ignores the other's.
func (e *Edge) card(w http.ResponseWriter, r *http.Request, req request) {
	if req.rest == JWKSPath {
		e.jwks(w, r)
		return
	}
	if req.rest != ".well-known/agent-card.json" && req.rest != ".well-known/agent.json" {
		writeRESTError(w, r, mailbox.Errorf(mailbox.CodeNotFound, "%s: no such route; the agent's card is at %s.well-known/agent-card.json", r.URL.Path, req.baseURL))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeRESTError(w, r, mailbox.Errorf(mailbox.CodeMethodNotAllowed, "%s %s: method not allowed; read the card with GET", r.Method, r.URL.Path))
		return
	}
	reg, err := e.svc.Registered(r.Context(), req.agent)
	if err != nil {
		writeRESTError(w, r, err)
		return
	}
	body, err := e.cardBytes(e.cardFor(reg, req.baseURL))
	if err != nil {
		writeRESTError(w, r, err)
		return
	}
	// The card changes only when it is registered again (or the daemon
	// starts with other tokens or card settings): a client may keep it a
	// short while (CardMaxAge) and revalidate it (spec 8.6.1) with the
	// validator of its content or its Last-Modified.
	modified, dated := e.cardModified(reg)
	serveRevalidatable(w, r, body, modified, dated)
}

// serveRevalidatable answers a GET or HEAD of a document that changes
// only with a registration or a start (a card, the keys that sign it):
// kept CardMaxAge, validated by its content's ETag and its Last-Modified
// (dated: it has one).
func serveRevalidatable(w http.ResponseWriter, r *http.Request, body []byte, modified time.Time, dated bool) {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "max-age="+strconv.Itoa(int(CardMaxAge/time.Second)))
	if dated {
		h.Set("Last-Modified", modified.Format(http.TimeFormat))
	}
	if notModified(r, etag, modified, dated) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", wire.ContentTypeJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// encodeCard is the JSON of a card as served: a line, HTML characters
// as they are.
func encodeCard(card obj) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(card); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CardMaxAge is how long a client or a cache may keep a card without
// revalidating it: short, since a card registered anew should be seen
// within a minute, and a card kept past its change still names the same
// base URL and bindings, which never change.
const CardMaxAge = 60 * time.Second

// cardModified is the card's Last-Modified: when the agent was last
// registered, or when this edge started if later (its tokens and card
// settings may differ from the last run's), to the second. A card
// registered (or an edge started) within the current second has none
// (dated false): it could change again within that second, and a client
// holding the same second would be told wrongly that it has not (the
// "weak" Last-Modified of RFC 9110 8.8.2.2).
func (e *Edge) cardModified(reg mailbox.RegisteredAgent) (time.Time, bool) {
	at := time.UnixMilli(reg.RegisteredAtMs)
	if e.started.After(at) {
		at = e.started
	}
	at = at.UTC().Truncate(time.Second)
	return at, e.opts.Now().UTC().Truncate(time.Second).After(at)
}

// notModified reports whether a GET or HEAD of the card may be answered
// 304 (RFC 9110 13.1.2, 13.1.3, 13.2.2): If-None-Match naming its ETag;
// without If-None-Match, which takes precedence, If-Modified-Since no
// earlier than its Last-Modified (dated: it has one), a date that does not
// parse being ignored.
func notModified(r *http.Request, etag string, modified time.Time, dated bool) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		return etagMatches(inm, etag)
	}
	ims := r.Header.Get("If-Modified-Since")
	if ims == "" || !dated {
		return false
	}
	t, err := http.ParseTime(ims)
	return err == nil && !modified.After(t)
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 13.1.2 asks for GET and HEAD), or is "*".
func etagMatches(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

func (e *Edge) cardFor(reg mailbox.RegisteredAgent, base string) obj {
	c := reg.Card
	skills := make([]obj, len(c.Skills))
	for i, s := range c.Skills {
		name := s.Name
		if name == "" {
			// A2A requires a skill name; a card registered without one
			// (Marianne's) is named by its id.
			name = s.ID
		}
		skills[i] = obj{"id": s.ID, "name": name, "description": s.Description, "tags": s.Tags, "examples": s.Examples}
	}
	modes := func(m []string) []string {
		if len(m) == 0 {
			return []string{"text/plain", "application/json"}
		}
		return m
	}
	version := c.Version
	if version == "" {
		version = "0.0.0"
	}
	out := obj{
		"name":        c.Name,
		"description": c.Description,
		"version":     version,
		// v1.0: every interface at the base URL, JSON-RPC first.
		"supportedInterfaces": []obj{
			{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			{"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
			{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
		},
		// v0.3.
		"protocolVersion":      "0.3.0",
		"url":                  base,
		"preferredTransport":   "JSONRPC",
		"additionalInterfaces": []obj{{"url": base, "transport": "JSONRPC"}},
		// Without streaming: true every client turns a streaming send into
		// a blocking one.
		"capabilities":       obj{"streaming": true, "pushNotifications": true},
		"defaultInputModes":  modes(c.DefaultInputModes),
		"defaultOutputModes": modes(c.DefaultOutputModes),
		"skills":             skills,
	}
	e.declareSecurity(out)
	return out
}

package served

import (
	"net/http"
	"strings"
)

// Paths are where the daemon serves each face.
type Paths struct {
	// A2A is the A2A edge's prefix ("/agents/"): /agents/{agent}/ is an
	// agent's base URL.
	A2A string
	// Covenant is Covenant's dialect's prefix ("/compat/covenant/").
	Covenant string
	// MCP is the MCP face's path ("/mcp").
	MCP string
	// Events is the native event stream's path ("/a2a/events").
	Events string
}

// The A2A edge's route templates under an agent's base URL. The HTTP+JSON
// binding takes them with and without a "v1/" before them.
var a2aTails = []string{"message:send", "message:stream", "tasks", "tasks/{id}", "tasks/{id}:cancel", "tasks/{id}:subscribe",
	"tasks/{id}/pushNotificationConfigs", "tasks/{id}/pushNotificationConfigs/{configId}", "extendedAgentCard"}

// ByPath classifies requests by where p says each face is. Every route
// string it returns is made here, once: classifying allocates nothing.
func ByPath(p Paths) Classify {
	base := p.A2A + "{agent}/"
	rest := map[string]string{"": base}
	v1 := map[string]string{"": base + "v1/"}
	for _, t := range a2aTails {
		rest[t] = base + t
		v1[t] = base + "v1/" + t
	}
	cards := map[string]string{"agent-card.json": base + ".well-known/agent-card.json", "agent.json": base + ".well-known/agent.json"}
	otherWellKnown := base + ".well-known/{other}"
	legacy := base + "rpc"
	agentOnly := strings.TrimSuffix(base, "/")
	mcpRoute := p.MCP
	eventsRoute := p.Events
	return func(r *http.Request) Slot {
		path := r.URL.Path
		switch {
		case strings.HasPrefix(path, p.A2A):
			return a2a(r, strings.TrimPrefix(r.URL.EscapedPath(), p.A2A), rest, v1, cards, otherWellKnown, legacy, agentOnly)
		case strings.HasPrefix(path, p.Covenant):
			// Covenant's dispatcher names the route it matched.
			return Slot{Binding: Covenant, Method: HTTPMethod(r.Method)}
		case path == p.MCP:
			// The MCP face names the JSON-RPC method.
			return Slot{Binding: MCP, Route: mcpRoute}
		case path == p.Events:
			return Slot{Binding: Events, Route: eventsRoute, Method: HTTPMethod(r.Method)}
		}
		// The native API names the route it matched.
		return Slot{Binding: Native, Method: HTTPMethod(r.Method)}
	}
}

// a2a classifies a request under /agents/: p is the escaped path after the
// prefix.
func a2a(r *http.Request, p string, rest, v1, cards map[string]string, otherWellKnown, legacy, agentOnly string) Slot {
	_, tail, ok := strings.Cut(p, "/")
	method := HTTPMethod(r.Method)
	switch {
	case !ok:
		return Slot{Binding: A2AREST, Route: agentOnly, Method: method}
	case tail == "" && r.Method == http.MethodPost:
		// The edge names the JSON-RPC method.
		return Slot{Binding: A2AJSONRPC, Route: rest[""]}
	case tail == "rpc":
		return Slot{Binding: Legacy, Route: legacy}
	case strings.HasPrefix(tail, ".well-known/"):
		route, ok := cards[strings.TrimPrefix(tail, ".well-known/")]
		if !ok {
			route = otherWellKnown
		}
		return Slot{Binding: A2ACard, Route: route, Method: method}
	}
	table := rest
	if t, ok := strings.CutPrefix(tail, "v1/"); ok {
		table, tail = v1, t
	}
	return Slot{Binding: A2AREST, Route: table[a2aTemplate(tail)], Method: method}
}

// a2aTemplate is the template of an HTTP+JSON path under a base URL, ""
// for a path the binding does not serve (no route: Unmatched).
func a2aTemplate(tail string) string {
	switch tail {
	case "", "message:send", "message:stream", "tasks", "extendedAgentCard":
		return tail
	}
	t, ok := strings.CutPrefix(tail, "tasks/")
	if !ok || t == "" {
		return "\x00"
	}
	if _, configs, ok := strings.Cut(t, "/pushNotificationConfigs"); ok {
		if configs == "" {
			return "tasks/{id}/pushNotificationConfigs"
		}
		return "tasks/{id}/pushNotificationConfigs/{configId}"
	}
	if strings.Contains(t, "/") {
		return "\x00"
	}
	_, verb, _ := strings.Cut(t, ":")
	switch verb {
	case "":
		return "tasks/{id}"
	case "cancel":
		return "tasks/{id}:cancel"
	case "subscribe":
		return "tasks/{id}:subscribe"
	}
	return "\x00"
}

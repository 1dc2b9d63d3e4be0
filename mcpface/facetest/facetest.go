// Package facetest is the suite every transport of Mailroom's MCP face
// runs: the official Go SDK's client against a real daemon, through
// whatever connect gives it (the in-memory transport in mcpface's own
// tests, a real `mailroom mcp` subprocess over stdio in cmd/mailroom's,
// the daemon's /mcp route over streamable HTTP in daemon's).
//
// The suite starts no daemon itself: each caller hands it a Factory that
// does, as river's riverdrivertest.Exercise takes its driver. The daemon
// mounts the face, so a suite of the face that started one would import
// back up a layer; this package imports nothing of the daemon's.
package facetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
)

// The principals of the suite's daemon.
const (
	Planner = "planner@local" // sends and drains, reads the mailbox
	Coder   = "coder@local"   // leases and posts results
	Oncall  = "Alice"         // an operator (a name, not an agent id): reads and repairs
	Intern  = "intern@local"  // may lease, may send to nobody
	Mailer  = "mailer@local"  // sends and drains, may not read the mailbox
)

// Daemon is the suite's daemon and a token for each principal.
type Daemon struct {
	Target
	Tokens map[string]string
}

// Target is a daemon a Factory started, as the suite reaches it
// (*daemontest.Daemon is one).
type Target interface {
	Addr() string // host:port
	URL() string  // http:// and Addr
}

// Factory starts a daemon that requires the grants' tokens and nothing
// else of a caller (tokens: one entry per grant, by its SHA256), serving
// the face wherever the caller's Connect reaches it, and stops it when the
// test ends.
type Factory func(t *testing.T, grants []Grant) Target

// Grant is one principal of the suite's daemon: the bearer token the suite
// made for it and its capabilities.
type Grant struct {
	Principal string
	Token     string
	Caps      []string
}

// SHA256 is the token's hex SHA-256 hash, as a tokens entry holds it.
func (g Grant) SHA256() string {
	h := sha256.Sum256([]byte(g.Token))
	return hex.EncodeToString(h[:])
}

// Connect opens an MCP session acting as the token's principal against
// the daemon, with the Go SDK's client as o says (ClientSession does
// that). It is closed when the test ends.
type Connect func(t *testing.T, d *Daemon, token string, o Session) *mcp.ClientSession

// Session is how a test wants its client session.
type Session struct {
	// Protocol is the MCP version the client asks for ("": the SDK's
	// latest). Hosts speak 2025-06-18 and 2025-11-25 today, where a
	// subscription is a request answered at once; from 2026-07-28 it is
	// a subscriptions/listen stream the client does not wait for.
	Protocol string
	// Updated is told each resource the server says changed.
	Updated func(uri string)
	// Acked is told each subscriptions/acknowledged notification (the
	// 2026-07-28 protocol's answer to a subscription).
	Acked func()
}

// Legacy is the protocol version hosts speak today.
const Legacy = "2025-11-25"

// StartDaemon starts a daemon with start, requiring tokens, one per
// principal above.
func StartDaemon(t *testing.T, start Factory) *Daemon {
	t.Helper()
	caps := map[string][]string{
		Planner: {"a2a.send.*", "a2a.drain", "a2a.read"},
		Coder:   {"a2a.recv", "a2a.respond.*"},
		Oncall:  {"a2a.read", "a2a.repair.requeue", "a2a.repair.force_error", "a2a.register", "a2a.send." + Planner}, // the last: move_queued may hand work to the planner
		Intern:  {"a2a.recv"},
		Mailer:  {"a2a.send.*", "a2a.drain"},
	}
	d := &Daemon{Tokens: map[string]string{}}
	var grants []Grant
	for _, p := range []string{Planner, Coder, Oncall, Intern, Mailer} {
		// The daemon's own tokens look so ("mailroom token new").
		d.Tokens[p] = "mr_" + rand.Text()
		grants = append(grants, Grant{Principal: p, Token: d.Tokens[p], Caps: caps[p]})
	}
	d.Target = start(t, grants)
	return d
}

// Client is a Go client of the daemon as principal.
func (d *Daemon) Client(t *testing.T, principal string) *client.Client {
	t.Helper()
	c, err := client.New(d.Addr(), client.WithToken(d.Tokens[principal]))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Run runs the suite, each case against a daemon of its own that start
// starts.
func Run(t *testing.T, connect Connect, start Factory) {
	t.Run("Cycle", func(t *testing.T) { testCycle(t, connect, start) })
	t.Run("LongPoll", func(t *testing.T) { testLongPoll(t, connect, start) })
	t.Run("GuardedRepair", func(t *testing.T) { testGuardedRepair(t, connect, start) })
	t.Run("Refusals", func(t *testing.T) { testRefusals(t, connect, start) })
	t.Run("Resources", func(t *testing.T) { testResources(t, connect, start, Legacy) })
	t.Run("ResourcesListen", func(t *testing.T) { testResources(t, connect, start, "") })
	t.Run("Schemas", func(t *testing.T) { testSchemas(t, connect, start) })
}

// Call calls a tool that must succeed and decodes its structured output
// into out (when not nil).
func Call(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any, out any) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", tool, args, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error %s", tool, args, text(res))
	}
	if out == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content %s does not decode: %v", tool, b, err)
	}
}

// Refused calls a tool that must be refused, as a tool error and not a
// protocol error, and returns the error's text.
func Refused(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v, want a tool error", tool, args, err)
	}
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		t.Fatalf("%s(%v) = %s, want a tool error", tool, args, b)
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func wantIn(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}

// InMemory is a Connect through the SDK's in-memory transport to a face
// built in this process.
func InMemory(build func(ctx context.Context, c *client.Client) (*mcp.Server, func(), error)) Connect {
	return func(t *testing.T, d *Daemon, token string, o Session) *mcp.ClientSession {
		t.Helper()
		c, err := client.New(d.Addr(), client.WithToken(token))
		if err != nil {
			t.Fatal(err)
		}
		srv, closeFace, err := build(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeFace)
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return ClientSession(t, ct, o)
	}
}

// ClientSession connects the Go SDK's client over transport as o says.
func ClientSession(t *testing.T, transport mcp.Transport, o Session) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if o.Updated != nil {
		opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { o.Updated(req.Params.URI) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "facetest", Version: "1"}, opts)
	if o.Acked != nil {
		c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "notifications/subscriptions/acknowledged" {
					o.Acked()
				}
				return res, err
			}
		})
	}
	cs, err := c.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: o.Protocol})
	if err != nil {
		t.Fatalf("connecting the MCP client: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

package mcpface_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/mcpface"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// startDaemon is the suite's Factory here: a daemon in this process
// requiring the suite's tokens; the face is built in this process too.
func startDaemon(t *testing.T, grants []facetest.Grant) facetest.Target {
	var tokens []auth.Token
	for _, g := range grants {
		tokens = append(tokens, auth.Token{Principal: g.Principal, SHA256: g.SHA256(), Caps: g.Caps})
	}
	return daemontest.Start(t, daemontest.Options{Tokens: tokens})
}

// TestInMemory runs the suite through the SDK's in-memory transport: the
// Go SDK's client and a face in this process, a real daemon behind it.
func TestInMemory(t *testing.T) {
	facetest.Run(t, facetest.InMemory(func(ctx context.Context, c *client.Client) (*mcp.Server, func(), error) {
		f, err := mcpface.New(ctx, c, mcpface.Options{Version: "test"})
		if err != nil {
			return nil, nil, err
		}
		return f.Server, f.Close, nil
	}), startDaemon)
}

// TestDaemonGone: a daemon that cannot be reached makes each tool call a
// tool error saying so, and nothing else; the session stays up.
func TestDaemonGone(t *testing.T) {
	d := facetest.StartDaemon(t, startDaemon)
	connect := facetest.InMemory(func(ctx context.Context, c *client.Client) (*mcp.Server, func(), error) {
		f, err := mcpface.New(ctx, c, mcpface.Options{})
		if err != nil {
			return nil, nil, err
		}
		return f.Server, f.Close, nil
	})
	s := connect(t, d, d.Tokens[facetest.Planner], facetest.Session{})
	d.Target.(*daemontest.Daemon).Stop()
	// The first call may go out on a connection the daemon closed as it
	// stopped, whose fate the client cannot know; once that is gone, a
	// refused connection means nothing was done.
	refused := false
	for range 3 {
		got := facetest.Refused(t, s, "send_task", map[string]any{"to": facetest.Coder, "intent": "into the void"})
		if refused = strings.Contains(got, "could not be reached, so nothing was done"); refused {
			break
		}
		if !strings.Contains(got, "did not answer") || !strings.Contains(got, "may or may not have taken effect") {
			t.Fatalf("send_task with the daemon gone: %q, want it to say the daemon could not be reached or did not answer", got)
		}
	}
	if !refused {
		t.Error("send_task with the daemon gone never said that nothing was done")
	}
	if err := s.Ping(t.Context(), nil); err != nil {
		t.Errorf("the session after a failed call: %v", err)
	}
}

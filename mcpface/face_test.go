package mcpface_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mcpface"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// TestInMemory runs the suite through the SDK's in-memory transport: the
// Go SDK's client and a face in this process, a real daemon behind it.
func TestInMemory(t *testing.T) {
	facetest.Run(t, facetest.InMemory(func(ctx context.Context, c *client.Client) (*mcp.Server, func(), error) {
		f, err := mcpface.New(ctx, c, mcpface.Options{Version: "test"})
		if err != nil {
			return nil, nil, err
		}
		return f.Server, f.Close, nil
	}), nil)
}

// TestDaemonGone: a daemon that cannot be reached makes each tool call a
// tool error saying so, and nothing else; the session stays up.
func TestDaemonGone(t *testing.T) {
	d := facetest.StartDaemon(t, nil)
	connect := facetest.InMemory(func(ctx context.Context, c *client.Client) (*mcp.Server, func(), error) {
		f, err := mcpface.New(ctx, c, mcpface.Options{})
		if err != nil {
			return nil, nil, err
		}
		return f.Server, f.Close, nil
	})
	s := connect(t, d, d.Tokens[facetest.Planner], facetest.Session{})
	d.Stop()
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

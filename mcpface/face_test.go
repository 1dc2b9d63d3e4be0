package mcpface_test

import (
	"context"
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

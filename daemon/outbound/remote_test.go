package outbound_test

import (
	"testing"

	"github.com/mailroom/mailroom/internal/remotetest"
)

// The remote agent of these tests: a real a2a-go v0.3.3 server (JSON-RPC
// v0.3) whose executor acts on the first word of the message it gets
// (remotetest.GoExecutor); its stream's chunks read "one two three".

type goRemote = remotetest.GoRemote

func startGoRemote(t *testing.T, name string, streaming bool) *goRemote {
	t.Helper()
	return remotetest.StartGoRemote(t, name, streaming, "one", " two", " three")
}

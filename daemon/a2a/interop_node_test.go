package a2a_test

import (
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/remotetest"
)

// The official JavaScript SDK, @a2a-js/sdk, in both the versions our users
// run (0.3.14: v0.3 JSON-RPC; 1.3.0: v1.0 JSON-RPC and HTTP+JSON), drives
// a real daemon from interop/node (node:test), over plain HTTP and again
// over HTTPS, node trusting the test's CA through NODE_EXTRA_CA_CERTS as
// an operator's node agents would. Versions are pinned in its
// package-lock.json. Without node or the packages the test skips, except
// on CI (CI=true), where it fails: .ci/run installs both.
func TestJSSDKInterop(t *testing.T) {
	node, dir := remotetest.Node(t, "the @a2a-js/sdk interop tests", "a2a-v03", "a2a-v1")
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		d := daemontest.Start(t, opts)
		remotetest.NodeTests(t, node, dir, "test", nodeEnv(d, "MAILROOM_URL="+d.URL())...)
	})
}

// nodeEnv is env with, for a daemon serving TLS, NODE_EXTRA_CA_CERTS
// naming its CA: node adds it to the CAs its fetch and the SDKs trust.
func nodeEnv(d *daemontest.Daemon, env ...string) []string {
	if d.CAFile != "" {
		env = append(env, "NODE_EXTRA_CA_CERTS="+d.CAFile)
	}
	return env
}

package main

import (
	"testing"

	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/remotetest"
	"github.com/mailroom/mailroom/internal/testpki"
	"github.com/mailroom/mailroom/mcpface/facetest"
)

// TestMCPTypeScriptInterop: the official TypeScript MCP SDK's client
// (@modelcontextprotocol/sdk 1.32.2, pinned in interop/node's
// package-lock.json), as an MCP host, spawns this binary as `mailroom mcp`
// over stdio against a real daemon and runs a full cycle, then the same
// over streamable HTTP against the daemon's /mcp
// (interop/node/mcp/host.test.mjs); then /mcp alone with the SDK's
// default protocol version, with 2025-11-25 asked for explicitly, a 401's
// challenge and the answers' caching (http.test.mjs). Its client refuses a whole tools list
// whose schemas it cannot read, so this is what catches a tool typed too
// loosely. All of it runs over plain HTTP, then against a daemon serving
// TLS with a certificate from the test's CA: node trusts it through
// NODE_EXTRA_CA_CERTS, `mailroom mcp` through MAILROOM_CA_FILE, as a host
// would configure them. Without node or the packages the test skips,
// except on CI (CI=true), where it fails: .ci/run installs both.
func TestMCPTypeScriptInterop(t *testing.T) {
	node, dir := remotetest.Node(t, "the @modelcontextprotocol/sdk interop test", "@modelcontextprotocol/sdk")
	for _, hop := range []struct {
		name string
		tls  bool
	}{{"http", false}, {"https", true}} {
		t.Run(hop.name, func(t *testing.T) {
			var trust []string // what node and `mailroom mcp` are told to trust
			mcpHTTP := func(c *config.Config) { c.MCPHTTP = true }
			scheme := "http://"
			if hop.tls {
				certDir := t.TempDir()
				ca := testpki.NewCA(t, "mcp interop CA")
				cert, key := ca.Issue(t, testpki.Options{CN: "mailroom daemon"}).WriteFiles(t, certDir, "daemon")
				caFile := ca.WriteFile(t, certDir, "ca.crt")
				mcpHTTP = func(c *config.Config) { c.MCPHTTP, c.TLSCertFile, c.TLSKeyFile = true, cert, key }
				scheme = "https://"
				trust = []string{"NODE_EXTRA_CA_CERTS=" + caFile, "MAILROOM_CA_FILE=" + caFile}
			}
			d := facetest.StartDaemon(t, faceDaemon(mcpHTTP))
			// The binary under test is this test binary, run as `mailroom`
			// when asMainEnv is set (e2e_proc_test.go): node passes its
			// environment on to the servers it spawns.
			remotetest.NodeTests(t, node, dir, "mcp", append(trust, asMainEnv+"=1", "MAILROOM_MCP_BIN="+binPath, "MAILROOM_URL="+scheme+d.Addr(),
				"MAILROOM_SENDER="+facetest.Planner, "MAILROOM_SENDER_TOKEN="+d.Tokens[facetest.Planner],
				"MAILROOM_WORKER="+facetest.Coder, "MAILROOM_WORKER_TOKEN="+d.Tokens[facetest.Coder])...)
		})
	}
}

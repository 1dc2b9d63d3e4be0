package a2a_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/daemontest"
	"github.com/mailroom/mailroom/internal/remotetest"
)

// @a2a-js/sdk 1.3.0 resolves the card of an agent on a daemon with tokens
// and calls it with the token, over JSON-RPC and HTTP+JSON
// (interop/node/test/tokens.test.mjs, which skips under TestJSSDKInterop's
// daemon without tokens), over plain HTTP and over HTTPS with the test's
// CA. Without node or the packages the test skips, except on CI
// (CI=true), where it fails.
func TestJSSDKCardWithTokens(t *testing.T) {
	node, dir := remotetest.Node(t, "the @a2a-js/sdk interop tests", "a2a-v1")
	overEachHop(t, func(t *testing.T, opts daemontest.Options) {
		opts.Tokens = edgeTokens
		it := newInterop(t, opts)
		base := it.register("coder@local")
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", filepath.Join("test", "tokens.test.mjs"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), nodeEnv(it.d, "MAILROOM_URL="+it.base, "MAILROOM_A2A_BASE="+base, "MAILROOM_A2A_TOKEN=tok-alice")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node --test test/tokens.test.mjs: %v\n%s", err, out)
		}
		t.Logf("node --test test/tokens.test.mjs:\n%s", out)
	})
}

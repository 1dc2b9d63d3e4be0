package daemon

import (
	"log/slog"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/tlsreload"
)

// authOptions are what the authenticator needs beyond the tokens
// entries: the certificates revoked, the log its refusals go to, and,
// when client certificates are asked for, the client CAs as reloaded with
// the served certificate (certs is nil without TLS).
func authOptions(cfg config.Config, logger *slog.Logger, certs *tlsreload.Reloader) []auth.Option {
	opts := []auth.Option{auth.WithRevoked(cfg.RevokedCertificates), auth.WithLogger(logger)}
	if certs != nil && cfg.ClientAuth() != "" {
		opts = append(opts, auth.WithClientCAs(certs.ClientCAs))
	}
	return opts
}

package daemon

import (
	"log/slog"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/config"
	"github.com/mailroom/mailroom/internal/tlsreload"
)

// openAuth is the authenticator of cfg's access entries.
func openAuth(cfg config.Config, logger *slog.Logger, certs *tlsreload.Reloader) (*auth.Authenticator, error) {
	opts, err := authOptions(cfg, logger, certs)
	if err != nil {
		return nil, err
	}
	return auth.New(cfg.Tokens, opts...)
}

// authOptions are what the authenticator needs beyond the tokens
// entries: the certificates revoked, the log its refusals go to, and,
// when client certificates are asked for, the client CAs as reloaded with
// the served certificate (certs is nil without TLS), and the OIDC issuer.
func authOptions(cfg config.Config, logger *slog.Logger, certs *tlsreload.Reloader) ([]auth.Option, error) {
	opts := []auth.Option{auth.WithRevoked(cfg.RevokedCertificates), auth.WithLogger(logger)}
	if certs != nil && cfg.ClientAuth() != "" {
		opts = append(opts, auth.WithClientCAs(certs.ClientCAs))
	}
	oidc, err := cfg.OIDC()
	if err != nil {
		return nil, err
	}
	if oidc != nil {
		opts = append(opts, auth.WithOIDC(*oidc))
		logger.Info("OIDC tokens accepted", "issuer", oidc.Issuer, "audience", oidc.Audience)
	}
	return opts, nil
}

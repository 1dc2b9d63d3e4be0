package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"

	"github.com/mailroom/mailroom/daemon/config"
)

// cluster is what an instance of a shared mailbox needs to forward writes
// to the leader safely (docs/security.md, hop 3): the TLS it verifies the
// leader's certificate with.
type cluster struct {
	// tls is cluster_ca_file's CAs; nil is Go's defaults (the system's).
	tls *tls.Config
}

// clusterOf reads the cluster's files cfg names. config.Validate read
// them a moment before and refused the start if they were wrong; should
// they fail now (removed since), the instance trusts no leader at all, and
// says so, rather than fall back to the system's CAs: every forwarded
// write is then refused with the reason.
func clusterOf(cfg config.Config, logger *slog.Logger) cluster {
	t, err := cfg.ClusterTLS()
	if err != nil {
		logger.Error("no leader's certificate will be trusted: writes sent to this instance while it follows are refused", "err", err)
		return cluster{tls: &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}}
	}
	return cluster{tls: t}
}

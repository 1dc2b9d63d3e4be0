package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The hop between instances of one shared mailbox (store postgres): a
// follower forwards writes to the leader at its advertise_url, and over
// https verifies the leader's certificate with cluster_ca_file's CAs. The
// file is read at start, so a wrong one refuses the start rather than
// every forwarded write.

// checkCluster reads the cluster's files, refusing one that cannot be
// used, naming its key, the path and what was expected.
func checkCluster(c Config) error {
	_, err := c.ClusterTLS()
	return err
}

// ClusterTLS is the TLS a follower reaches the leader with: the CAs of
// cluster_ca_file alone (the instances' own CA, not every public one), or
// nil when the key is empty, which is Go's defaults (the system's CAs).
func (c Config) ClusterTLS() (*tls.Config, error) {
	if c.ClusterCAFile == "" {
		return nil, nil
	}
	const want = "a PEM file holding the certificates of the CAs that issued the instances' certificates (tls_cert_file)"
	raw, err := os.ReadFile(c.ClusterCAFile)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cluster_ca_file: got %q: cannot read it (%v); expected %s", c.ClusterCAFile, err, want)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := raw; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		n++
		cert, err := x509.ParseCertificate(b.Bytes)
		if b.Type != "CERTIFICATE" || err != nil {
			return nil, fmt.Errorf("cluster_ca_file: got %q: PEM block %d (%s) is not a certificate that parses; expected %s", c.ClusterCAFile, n, b.Type, want)
		}
		pool.AddCert(cert)
	}
	if n == 0 {
		return nil, fmt.Errorf("cluster_ca_file: got %q: it holds no PEM CERTIFICATE block; expected %s", c.ClusterCAFile, want)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

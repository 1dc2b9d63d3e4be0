package config

import (
	"bytes"
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
// https verifies the leader's certificate with cluster_ca_file's CAs,
// showing cluster_cert_file to a leader that asks for a certificate; it
// authenticates its callers to the leader with cluster_secret_file's
// secret. The
// files are read at start, so a wrong one refuses the start rather than
// every forwarded write.

// checkCluster reads the cluster's files, refusing one that cannot be
// used, naming its key, the path and what was expected.
func checkCluster(c Config) error {
	if _, err := c.ClusterTLS(); err != nil {
		return err
	}
	_, err := c.ClusterSecret()
	return err
}

// ClusterTLS is the TLS a follower reaches the leader with: the CAs of
// cluster_ca_file alone (the instances' own CA, not every public one),
// and the client certificate of cluster_cert_file and cluster_key_file
// for a leader that asks for one (tls_client_auth); nil when none is set,
// which is Go's defaults (the system's CAs, no certificate).
func (c Config) ClusterTLS() (*tls.Config, error) {
	cfg, err := clientFiles{cert: c.ClusterCertFile, key: c.ClusterKeyFile, certName: "cluster_cert_file", keyName: "cluster_key_file"}.load()
	if err != nil || c.ClusterCAFile == "" {
		return cfg, err
	}
	pool, err := c.clusterCAs()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// clusterCAs reads cluster_ca_file, refusing one without a certificate
// or with a block that is none (a CertPool would skip it and say
// nothing).
func (c Config) clusterCAs() (*x509.CertPool, error) {
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
	return pool, nil
}

// MinClusterSecret is the shortest cluster secret accepted, in bytes:
// the output of `openssl rand -base64 32` is 44.
const MinClusterSecret = 32

// ClusterSecret is the secret of cluster_secret_file, without the line
// end an editor or `openssl rand` leaves, or nil when the key is empty.
// Its errors name the key and the path, never what the file holds.
func (c Config) ClusterSecret() ([]byte, error) {
	if c.ClusterSecretFile == "" {
		return nil, nil
	}
	const want = "a file holding the cluster's secret (at least 32 bytes, such as the output of openssl rand -base64 32), the same file on every instance"
	raw, err := os.ReadFile(c.ClusterSecretFile)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cluster_secret_file: got %q: cannot read it (%v); expected %s", c.ClusterSecretFile, err, want)
	}
	secret := bytes.TrimRight(raw, "\r\n")
	if len(secret) < MinClusterSecret {
		return nil, fmt.Errorf("cluster_secret_file: got %q: it holds %d bytes; expected %s", c.ClusterSecretFile, len(secret), want)
	}
	return secret, nil
}

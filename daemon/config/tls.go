package config

import (
	"fmt"

	"github.com/mailroom/mailroom/internal/tlsreload"
)

// TLS reports whether the daemon serves HTTPS itself.
func (c Config) TLS() bool { return c.TLSCertFile != "" }

// HTTPS reports whether clients reach the daemon over HTTPS: served by
// the daemon, or ended by a proxy in front of it. The URLs the daemon
// writes (cards, advertise_url) then say https.
func (c Config) HTTPS() bool { return c.TLS() || c.TLSTerminatedByProxy }

// TLSFiles are the certificate files, named as their keys for messages.
func (c Config) TLSFiles() tlsreload.Files {
	return c.withClientCA(tlsreload.Files{Cert: c.TLSCertFile, Key: c.TLSKeyFile, CertName: "tls_cert_file", KeyName: "tls_key_file"})
}

// checkTLS refuses one of the certificate files without the other, and
// files that do not read or parse: a daemon that started would otherwise
// fail at its first handshake, where its operator is not looking. The
// daemon loads them again when it opens; this is the check at start that
// says which key to fix.
func checkTLS(c Config) error {
	switch {
	case c.TLSCertFile == "" && c.TLSKeyFile == "":
		return nil
	case c.TLSKeyFile == "":
		return fmt.Errorf("tls_key_file: empty, expected the PEM private key of tls_cert_file %q (set both or neither)", c.TLSCertFile)
	case c.TLSCertFile == "":
		return fmt.Errorf("tls_cert_file: empty, expected the PEM certificate chain of tls_key_file %q (set both or neither)", c.TLSKeyFile)
	}
	_, err := tlsreload.Load(c.TLSFiles())
	return err
}

package main

import (
	"crypto/tls"
	"errors"

	"github.com/mailroom/mailroom/client"
)

// tlsFlags are the files of a client's TLS: every verb that talks to the
// daemon takes them (bench's own flags too), each with its MAILROOM_*
// variable.
type tlsFlags struct{ caFile, certFile, keyFile string }

// tlsExample is the line of https every client verb's help could show;
// docs/cli.md has the same.
const tlsExample = "--addr https://mail.example:7717 --ca-file ca.pem [--cert me.crt --key me.key]"

func addTLSFlags(fs *verbFlags, e *env) *tlsFlags {
	tf := &tlsFlags{}
	fs.StringVar(&tf.caFile, "ca-file", e.getenv("MAILROOM_CA_FILE"),
		"PEM file of the CA that signed the daemon's certificate, trusted instead of the system's CAs; a host:port --addr is then https (env MAILROOM_CA_FILE)")
	fs.StringVar(&tf.certFile, "cert", e.getenv("MAILROOM_CERT_FILE"),
		"PEM client certificate (then its chain) to present when the daemon asks for one (mTLS), with --key (env MAILROOM_CERT_FILE)")
	fs.StringVar(&tf.keyFile, "key", e.getenv("MAILROOM_KEY_FILE"),
		"PEM private key of --cert (env MAILROOM_KEY_FILE)")
	return tf
}

// config reads the files into the client's TLS, nil when none is given;
// a wrong file is a usage error naming its flag and variable.
func (tf *tlsFlags) config() (*tls.Config, error) {
	cfg, err := client.TLSFiles(tf.caFile, tf.certFile, tf.keyFile)
	fe, ok := errors.AsType[*client.TLSFileError](err)
	switch {
	case err == nil:
		return cfg, nil
	case !ok:
		return nil, err
	case fe.Path == "":
		return nil, usagef("%s: missing; --cert and --key go together (the client certificate and its key): give both, or neither", tlsFlagOf(fe.File))
	}
	return nil, usagef("%s: got %q: %v", tlsFlagOf(fe.File), fe.Path, fe.Err)
}

// tlsFlagOf is a TLS file's flag and variable, as a usage error names it.
func tlsFlagOf(f client.TLSFile) string {
	switch f {
	case client.FileCA:
		return "--ca-file (MAILROOM_CA_FILE)"
	case client.FileCert:
		return "--cert (MAILROOM_CERT_FILE)"
	default:
		return "--key (MAILROOM_KEY_FILE)"
	}
}

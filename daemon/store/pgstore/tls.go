package pgstore

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// certRefused is msg, an error connecting, made to name postgres_url and
// what it must hold when cause is the server's certificate refused
// (sslmode=verify-ca or verify-full): the fix is in the URL (sslrootcert,
// the host), and an operator reading "postgres store: connecting" alone
// would look at the database instead. Any other cause leaves msg as it is.
func certRefused(msg error, cause error) error {
	var refused *tls.CertificateVerificationError
	if !errors.As(cause, &refused) {
		return msg
	}
	return fmt.Errorf("postgres_url: %w; expected the server's certificate to be issued by the CA in sslrootcert for the host the URL names", msg)
}

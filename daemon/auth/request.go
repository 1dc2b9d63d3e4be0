package auth

import (
	"net/http"
)

// AuthenticateRequest is the caller of r: by its bearer token when it
// sends one, else by its client certificate, else refused as a request
// without credentials.
//
// A request with both is authenticated by its token, and the certificate
// then only has to be valid (verified, not revoked), not mapped: the
// certificate says which workload holds the connection, the token on whose
// behalf it asks, and the two differ on every hop that carries someone
// else's request (a mesh sidecar's certificate, an instance forwarding to
// its leader). Requiring them to agree would refuse those; letting the
// certificate win would make a stolen certificate outrank a token. The
// token grants nothing it would not grant alone.
func (a *Authenticator) AuthenticateRequest(r *http.Request) (Identity, error) {
	cert, err := a.clientCert(r.Context(), r.TLS)
	if err != nil {
		return Identity{}, err
	}
	header := r.Header.Get("Authorization")
	if header != "" || cert == nil {
		return a.bearer(r.Context(), header)
	}
	return a.certIdentity(cert)
}

package state

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// ClientTLS is the client side of credentials that carry a CA, nil for
// plain ones: verify the server against the instance's CA under the name
// the client dials (host), as sslmode=verify-full does. Every runtime and
// every service's client uses it.
func (c Credentials) ClientTLS(host string) (*tls.Config, error) {
	if c.CA == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.CA)) {
		return nil, errors.New("the recorded CA certificate does not parse")
	}
	return &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}, nil
}

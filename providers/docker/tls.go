package docker

import (
	"crypto/tls"
	"time"

	"github.com/sandboxer/sandboxer/internal/certs"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/sandboxer/sandboxer/state"
)

// Each TLS instance gets its own CA. Its key signs the instance's one
// server certificate and is then dropped, never stored: a copy of the CA
// file cannot be used to mint a certificate for anything else, and trust
// ends with the instance (a replace rotates it with the credentials).
// A per-lineage CA would have to keep its key in state to sign later
// instances, one more secret to guard, for no gain to a client that gets
// the CA with the credentials anyway.
const (
	tlsCertName = "server.crt"
	tlsKeyName  = "server.key"
	tlsCAName   = "ca.crt"
	pgHBAName   = "pg_hba.conf"
)

// instanceTLS is the certificate material of one instance.
type instanceTLS struct {
	caPEM   []byte
	certPEM []byte
	keyPEM  []byte // secret: copied into the containers only
	caFile  string // where caPEM was written for clients
}

// newInstanceTLS makes a CA and a server certificate valid for hosts
// (internal/certs): every name a client may use (advertised host, publish
// address, loopback, the containers' names on user networks).
func newInstanceTLS(commonName string, hosts []string, now time.Time) (*instanceTLS, error) {
	m, err := certs.New(commonName, hosts, now)
	if err != nil {
		return nil, err
	}
	return &instanceTLS{caPEM: m.CAPEM, certPEM: m.CertPEM, keyPEM: m.KeyPEM}, nil
}

// files are what every TLS service gets copied in beside its other
// secrets. The key is 0600 and owned by the service user: PostgreSQL
// refuses a key others can read.
func (t *instanceTLS) files() []containerFile {
	return []containerFile{
		{Path: secretPath(tlsCertName), Content: t.certPEM, Mode: 0o644},
		{Path: secretPath(tlsKeyName), Content: t.keyPEM, Mode: 0o600},
		{Path: secretPath(tlsCAName), Content: t.caPEM, Mode: 0o644},
	}
}

// postgresTLSArgs switch TLS on and point the server at an hba file that
// takes TCP logins only over TLS; the socket stays trusted, as in the
// image, for its init scripts.
func postgresTLSArgs() []string {
	return pgsvc.TLSArgs(secretPath(tlsCertName), secretPath(tlsKeyName), secretPath(pgHBAName))
}

// postgresHBA refuses every TCP connection that is not TLS.
func postgresHBA() containerFile {
	return containerFile{Path: secretPath(pgHBAName), Mode: 0o644, Content: pgsvc.TLSOnlyHBA()}
}

// clientTLS is the client side for credentials that carry a CA, nil for
// plain ones: verify the server against the instance's CA under the name
// the client dials, as sslmode=verify-full does.
func clientTLS(c state.Credentials, host string) (*tls.Config, error) { return c.ClientTLS(host) }

package docker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

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
	tlsCertName  = "server.crt"
	tlsKeyName   = "server.key"
	tlsCAName    = "ca.crt"
	pgHBAName    = "pg_hba.conf"
	certLifetime = 397 * 24 * time.Hour // within what clients accept for a leaf
)

// instanceTLS is the certificate material of one instance.
type instanceTLS struct {
	caPEM   []byte
	certPEM []byte
	keyPEM  []byte // secret: copied into the containers only
	caFile  string // where caPEM was written for clients
}

// newInstanceTLS makes a CA and a server certificate valid for hosts:
// every name a client may use (advertised host, publish address, loopback,
// the containers' names on user networks).
func newInstanceTLS(commonName string, hosts []string, now time.Time) (*instanceTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "sandboxer CA for " + commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() && !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" && !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create server certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &instanceTLS{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) // crypto/rand does not fail
	return n
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
	return []string{
		"-c", "ssl=on",
		"-c", "ssl_cert_file=" + secretPath(tlsCertName),
		"-c", "ssl_key_file=" + secretPath(tlsKeyName),
		"-c", "ssl_min_protocol_version=TLSv1.2",
		"-c", "hba_file=" + secretPath(pgHBAName),
	}
}

// postgresHBA refuses every TCP connection that is not TLS.
func postgresHBA() containerFile {
	return containerFile{Path: secretPath(pgHBAName), Mode: 0o644, Content: []byte(
		"# sandboxer: TLS only over TCP\n" +
			"local     all all     trust\n" +
			"hostssl   all all all scram-sha-256\n" +
			"hostnossl all all all reject\n")}
}

// redisTLSArgs replace the plain port by a TLS one on the same number;
// clients are not asked for certificates (they log in with ACL users).
func redisTLSArgs() []string {
	return []string{
		"--port", "0",
		"--tls-port", redisPort.Port(),
		"--tls-cert-file", secretPath(tlsCertName),
		"--tls-key-file", secretPath(tlsKeyName),
		"--tls-ca-cert-file", secretPath(tlsCAName),
		"--tls-auth-clients", "no",
	}
}

// clientTLS is the client side for credentials that carry a CA, nil for
// plain ones: verify the server against the instance's CA under the name
// the client dials, as sslmode=verify-full does.
func clientTLS(c state.Credentials, host string) (*tls.Config, error) { return c.ClientTLS(host) }

// writeCAFile writes the CA for clients (sslrootcert, redis-cli --cacert)
// as dir/name.ca.pem, mode 0600 in a 0700 directory, and returns its
// absolute path.
func writeCAFile(dir, name string, caPEM []byte) (string, error) {
	if dir == "" {
		return "", errors.New("TLS needs a directory for CA files, and the provider has none")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create CA directory: %w", err)
	}
	path := filepath.Join(abs, name+".ca.pem")
	tmp, err := os.CreateTemp(abs, ".ca-*")
	if err != nil {
		return "", fmt.Errorf("write CA file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(caPEM); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write CA file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write CA file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write CA file: %w", err)
	}
	return path, nil
}

// removeCAFiles removes the CA files recorded for an instance; one already
// gone counts as removed.
func removeCAFiles(rec *state.Record) error {
	var errs []error
	for _, c := range rec.Credentials {
		if c.CAFile == "" {
			continue
		}
		if err := os.Remove(c.CAFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove CA file: %w", err))
		}
	}
	return errors.Join(errs...)
}

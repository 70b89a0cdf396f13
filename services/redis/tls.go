package redis

import "strconv"

// TLSArgs replace the plain port by a TLS one on the same number; clients
// are not asked for certificates (they log in with ACL users). The paths
// are where the runtime put the files.
func TLSArgs(certFile, keyFile, caFile string) []string {
	return []string{
		"--port", "0",
		"--tls-port", strconv.Itoa(Port),
		"--tls-cert-file", certFile,
		"--tls-key-file", keyFile,
		"--tls-ca-cert-file", caFile,
		"--tls-auth-clients", "no",
	}
}

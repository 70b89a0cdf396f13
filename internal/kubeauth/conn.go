package kubeauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// The in-cluster connection: the API server's address from the
// environment the kubelet sets, the pod's own token and the cluster CA
// from its ServiceAccount volume.
const (
	inClusterDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	hostEnv      = "KUBERNETES_SERVICE_HOST"
	portEnv      = "KUBERNETES_SERVICE_PORT"
)

// Conn is how serve reaches the API server: its URL, an HTTP client that
// trusts the cluster's CA (and presents a client certificate, when the
// kubeconfig has one), and where its own bearer token comes from.
type Conn struct {
	Server string
	Client *http.Client
	// token returns the bearer token serve presents, "" for none (a
	// client certificate). In a pod it rereads the projected token file,
	// which the kubelet rotates.
	token func() (string, error)
}

// Source says where Connect finds the API server.
type Source struct {
	// Kubeconfig is a kubeconfig file (serve --kubeconfig, else the first
	// file of KUBECONFIG); "" means in-cluster.
	Kubeconfig string
	// Getenv reads the environment (KUBERNETES_SERVICE_HOST/_PORT); nil:
	// os.Getenv.
	Getenv func(string) string
	// Dir replaces the in-cluster ServiceAccount directory (tests).
	Dir string
}

// Connect opens the connection Source names. It reads files but does
// not call the API server.
func Connect(src Source) (*Conn, error) {
	if src.Kubeconfig != "" {
		return fromKubeconfig(src.Kubeconfig)
	}
	getenv := src.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := src.Dir
	if dir == "" {
		dir = inClusterDir
	}
	host, port := getenv(hostEnv), getenv(portEnv)
	if host == "" || port == "" {
		return nil, errors.New("no API server: not in a pod (KUBERNETES_SERVICE_HOST and _PORT are unset) and no --kubeconfig or KUBECONFIG")
	}
	ca, err := os.ReadFile(dir + "/ca.crt")
	if err != nil {
		return nil, fmt.Errorf("in-cluster CA: %w", err)
	}
	tc, err := tlsConfig(ca, nil, nil, false, "")
	if err != nil {
		return nil, err
	}
	tokenFile := dir + "/token"
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("in-cluster token: %w", err)
	}
	return &Conn{Server: "https://" + net.JoinHostPort(host, port), Client: httpClient(tc), token: fileToken(tokenFile)}, nil
}

// fileToken reads the token file at each call: a projected token is
// rotated by the kubelet, and a review is made at most once per token
// per CacheTTL.
func fileToken(path string) func() (string, error) {
	return func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read the API server token: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
}

func tlsConfig(ca, cert, key []byte, insecure bool, serverName string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: insecure} //nolint:gosec // only when the kubeconfig says so
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("the cluster's CA holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

func httpClient(tc *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc // the proxy settings stay the environment's, as kubectl's
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

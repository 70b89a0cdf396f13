package kubeauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeAPIServer answers TokenReviews from a table of tokens; it checks
// that the review asks for one audience and that serve presents its
// own credential.
type fakeAPIServer struct {
	t       *testing.T
	own     string // serve's own bearer token; "" to check a client certificate
	reviews map[string]tokenReviewStatus
	status  int // answer this HTTP status instead
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != reviewPath {
		http.NotFound(w, r)
		return
	}
	if f.own != "" && r.Header.Get("Authorization") != "Bearer "+f.own {
		f.t.Errorf("the review carries no bearer token of serve's own")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if f.own == "" && (r.TLS == nil || len(r.TLS.PeerCertificates) == 0) {
		f.t.Errorf("the review carries no client certificate")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		return
	}
	var tr tokenReview
	if err := json.NewDecoder(r.Body).Decode(&tr); err != nil || tr.Kind != "TokenReview" || tr.APIVersion != "authentication.k8s.io/v1" {
		f.t.Errorf("not a TokenReview: %v %+v", err, tr)
	}
	if !slices.Equal(tr.Spec.Audiences, []string{"sandboxer"}) {
		f.t.Errorf("audiences %v, want [sandboxer]", tr.Spec.Audiences)
	}
	st, ok := f.reviews[tr.Spec.Token]
	if !ok {
		st = tokenReviewStatus{Error: "invalid bearer token"}
	}
	tr.Status = st
	tr.Spec.Token = ""
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(tr)
}

func authenticated(user string, audiences ...string) tokenReviewStatus {
	st := tokenReviewStatus{Authenticated: true, Audiences: audiences}
	st.User.Username = user
	return st
}

// An in-cluster connection: the table of answers and what each becomes.
func TestReview(t *testing.T) {
	fake := &fakeAPIServer{t: t, own: "serve-own-token-secret", reviews: map[string]tokenReviewStatus{
		"tok-good":        authenticated("system:serviceaccount:agents:runner", "sandboxer"),
		"tok-no-aud":      authenticated("system:serviceaccount:agents:runner"),
		"tok-other-aud":   authenticated("system:serviceaccount:agents:runner", "other"),
		"tok-user":        authenticated("alice", "sandboxer"),
		"tok-bad-sa":      authenticated("system:serviceaccount:agents", "sandboxer"),
		"tok-extra-colon": authenticated("system:serviceaccount:agents:a:b", "sandboxer"),
	}}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	conn := inCluster(t, srv, fake.own)
	for token, want := range map[string]error{
		"tok-good": nil, "tok-no-aud": ErrUnauthenticated, "tok-other-aud": ErrUnauthenticated,
		"tok-user": ErrUnauthenticated, "tok-bad-sa": ErrUnauthenticated, "tok-extra-colon": ErrUnauthenticated,
		"tok-unknown": ErrUnauthenticated,
	} {
		id, err := conn.Review(context.Background(), token, "sandboxer")
		if !errors.Is(err, want) || (want == nil && id != Identity{"agents", "runner"}) {
			t.Errorf("%s: %v %v, want %v", token, id, err, want)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	for status, hint := range map[int]string{
		http.StatusForbidden:           "system:auth-delegator",
		http.StatusInternalServerError: "500",
		http.StatusUnauthorized:        "serve's own credentials",
	} {
		fake.status = status
		_, err := conn.Review(context.Background(), "tok-good", "sandboxer")
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), hint) {
			t.Errorf("API server answering %d: %v, want unavailable saying %q", status, err, hint)
		}
	}
	srv.Close()
	if _, err := conn.Review(context.Background(), "tok-good", "sandboxer"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("API server down: %v, want unavailable", err)
	}
}

// inCluster connects as a pod would, with srv as the API server.
func inCluster(t *testing.T, srv *httptest.Server, own string) *Conn {
	t.Helper()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	write(t, filepath.Join(dir, "ca.crt"), ca)
	write(t, filepath.Join(dir, "token"), []byte(own+"\n"))
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	env := map[string]string{hostEnv: host, portEnv: port}
	conn, err := Connect(Source{Getenv: func(k string) string { return env[k] }, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestConnectErrors(t *testing.T) {
	if _, err := Connect(Source{Getenv: func(string) string { return "" }}); err == nil || !strings.Contains(err.Error(), "not in a pod") {
		t.Errorf("no pod, no kubeconfig: %v", err)
	}
	dir := t.TempDir()
	env := map[string]string{hostEnv: "10.0.0.1", portEnv: "443"}
	if _, err := Connect(Source{Getenv: func(k string) string { return env[k] }, Dir: dir}); err == nil || !strings.Contains(err.Error(), "in-cluster CA") {
		t.Errorf("no CA file: %v", err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	write(t, kc, []byte(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://10.0.0.1"}}]
users: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}}]
`))
	if _, err := Connect(Source{Kubeconfig: kc}); err == nil || !strings.Contains(err.Error(), "exec or auth-provider") {
		t.Errorf("an exec plugin: %v", err)
	}
	write(t, kc, []byte("current-context: nope\ncontexts: []\n"))
	if _, err := Connect(Source{Kubeconfig: kc}); err == nil || !strings.Contains(err.Error(), `no context "nope"`) {
		t.Errorf("a missing context: %v", err)
	}
}

// A kubeconfig with a client certificate, as the local cluster's: once
// with the data inline, once with files beside it.
func TestKubeconfigClientCertificate(t *testing.T) {
	fake := &fakeAPIServer{t: t, reviews: map[string]tokenReviewStatus{
		"tok-good": authenticated("system:serviceaccount:agents:runner", "sandboxer"),
	}}
	srv := httptest.NewUnstartedServer(fake)
	caCert, caKey := newCA(t)
	clientCert, clientKey := newClient(t, caCert, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	dir := t.TempDir()
	inline := filepath.Join(dir, "inline")
	write(t, inline, []byte(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: `+srv.URL+`/
    certificate-authority-data: `+b64(serverCA)+`
users:
- name: admin
  user:
    client-certificate-data: `+b64(clientCert)+`
    client-key-data: `+b64(clientKey)+`
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`))
	write(t, filepath.Join(dir, "ca.pem"), serverCA)
	write(t, filepath.Join(dir, "client.pem"), clientCert)
	write(t, filepath.Join(dir, "client-key.pem"), clientKey)
	files := filepath.Join(dir, "files")
	write(t, files, []byte(`clusters:
- name: local
  cluster: {server: "`+srv.URL+`", certificate-authority: ca.pem}
users:
- name: admin
  user: {client-certificate: client.pem, client-key: `+filepath.Join(dir, "client-key.pem")+`}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`))
	for _, kc := range []string{inline, files} {
		conn, err := Connect(Source{Kubeconfig: kc})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(kc), err)
		}
		id, err := conn.Review(context.Background(), "tok-good", "sandboxer")
		if err != nil || id != (Identity{"agents", "runner"}) {
			t.Errorf("%s: %v %v", filepath.Base(kc), id, err)
		}
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func newClient(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

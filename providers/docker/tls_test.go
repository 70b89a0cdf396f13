package docker

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// The server certificate chains to the instance CA for every name a
// client may dial, and for nothing else.
func TestInstanceTLSNames(t *testing.T) {
	hosts := []string{"db.example", "0.0.0.0", "192.0.2.7", "127.0.0.1", "::1", "localhost", "sbx-ab-x-g1-postgres"}
	it, err := newInstanceTLS("sandbox.x", hosts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(it.caPEM) {
		t.Fatal("CA PEM does not parse")
	}
	block, _ := pem.Decode(it.certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db.example", "192.0.2.7", "127.0.0.1", "::1", "localhost", "sbx-ab-x-g1-postgres"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"0.0.0.0", "other.example", "192.0.2.8"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err == nil {
			t.Errorf("%s verified, but it is no name of the sandbox", name)
		}
	}
	other, err := newInstanceTLS("sandbox.y", hosts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherPool := x509.NewCertPool()
	otherPool.AppendCertsFromPEM(other.caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: otherPool, DNSName: "localhost"}); err == nil {
		t.Error("another sandbox's CA trusts this sandbox's certificate")
	}
}

func TestCAFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	path, err := kit.WriteCAFile(dir, caFileName("lin-1234567890", "sandbox.x", 2), []byte("pem"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA file %s: %v, mode %v", path, err, fi.Mode())
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("CA directory mode %v", di.Mode().Perm())
	}
	p := &Provider{CADir: dir}
	// An orphan of another generation keeps it; its own removes it.
	if err := p.removeOrphanCAFile(Managed{Address: "sandbox.x", Lineage: "lin-1234567890", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("another generation's orphan removed the file: %v", err)
	}
	if err := p.removeOrphanCAFile(Managed{Address: "sandbox.x", Lineage: "lin-1234567890", Generation: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("CA file still there: %v", err)
	}
	if err := p.removeOrphanCAFile(Managed{Address: "sandbox.x", Lineage: "lin-1234567890", Generation: 2}); err != nil {
		t.Errorf("second removal: %v", err)
	}
}

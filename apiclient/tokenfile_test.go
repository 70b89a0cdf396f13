package apiclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxer/sandboxer/apiclient"
)

// WithTokenFile (SANDBOXER_API_TOKEN_FILE) sends the file's content at
// each call, so a token the kubelet rotates is picked up; a missing or
// empty file is an error that does not quote a token.
func TestTokenFile(t *testing.T) {
	var mu sync.Mutex
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sandboxes":[]}`))
	}))
	defer ts.Close()
	file := filepath.Join(t.TempDir(), "token")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("first-token\n")
	t.Setenv("SANDBOXER_API_URL", ts.URL)
	t.Setenv("SANDBOXER_API_TOKEN", "")
	t.Setenv("SANDBOXER_API_TOKEN_FILE", file)
	c, ok, err := apiclient.FromEnv()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ctx := context.Background()
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}
	write("rotated-token")
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Bearer first-token", "Bearer rotated-token"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sent %q, want %q", got, want)
	}
	write("")
	if _, err := c.List(ctx); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty token file: %v", err)
	}
	write("secret-in-file")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err = c.List(ctx)
	if err == nil || strings.Contains(err.Error(), "secret-in-file") {
		t.Errorf("a missing token file: %v", err)
	}
	// SANDBOXER_API_TOKEN wins over the file.
	t.Setenv("SANDBOXER_API_TOKEN", "env-token")
	c, _, err = apiclient.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if _, err := c.List(ctx); err != nil || len(got) != 1 || got[0] != "Bearer env-token" {
		t.Errorf("with both set: %v %q", err, got)
	}
	if _, err := apiclient.New(ts.URL, ""); err == nil {
		t.Error("New without a token or a token file succeeded")
	}
}

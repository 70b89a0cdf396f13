package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

func TestNames(t *testing.T) {
	const lineage = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	tests := []struct {
		address string
		want    string
	}{
		{"sandbox.ci", "sbx-0f1e2d3c4b5a-ci-g3-postgres"},
		{"sandbox.api_v2", "sbx-0f1e2d3c4b5a-api_v2-g3-postgres"},
		{"sandbox.My-Box", "sbx-0f1e2d3c4b5a-my-box-" + hash6("sandbox.My-Box") + "-g3-postgres"},
		{`sandbox.agent["dev-7"]`, "sbx-0f1e2d3c4b5a-agent-dev-7-" + hash6(`sandbox.agent["dev-7"]`) + "-g3-postgres"},
		{`sandbox.agent["dev 7/ü"]`, "sbx-0f1e2d3c4b5a-agent-dev-7-" + hash6(`sandbox.agent["dev 7/ü"]`) + "-g3-postgres"},
		{`sandbox.x["` + strings.Repeat("k", 80) + `"]`, "sbx-0f1e2d3c4b5a-x-" + strings.Repeat("k", 22) + "-" + hash6(`sandbox.x["`+strings.Repeat("k", 80)+`"]`) + "-g3-postgres"},
		{`sandbox.x["!!!"]`, "sbx-0f1e2d3c4b5a-x-" + hash6(`sandbox.x["!!!"]`) + "-g3-postgres"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := containerName(lineage, tt.address, 3, "postgres")
		if got != tt.want {
			t.Errorf("containerName(%q) = %q, want %q", tt.address, got, tt.want)
		}
		if !dockerName.MatchString(got) || len(got) > 63 {
			t.Errorf("containerName(%q) = %q is not a valid, short Docker name", tt.address, got)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("%q and %q share the name %q", prev, tt.address, got)
		}
		seen[got] = tt.address
	}
	// Lineages that begin alike (test runs make such) never share names;
	// a lineage sandboxer did not make keeps a readable prefix.
	for _, pair := range [][2]string{
		{"snaptest-0a1b2c3d", "snaptest-0a1b2c3e"},
		{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5b-6978-8796-a5b4c3d2e1f0"},
		{"lin", "lin-"},
	} {
		if x, y := instanceName(pair[0], "sandbox.keep", 1), instanceName(pair[1], "sandbox.keep", 1); x == y {
			t.Errorf("lineages %q and %q share the instance name %q", pair[0], pair[1], x)
		}
	}
	if got := kit.LineagePart("snaptest-0a1b2c3d", sanitize); !strings.HasPrefix(got, "snap-") || len(got) != 12 {
		t.Errorf("lineagePart(snaptest-…) = %q, want snap- and 7 hash digits", got)
	}
	if got, long := containerName("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", `sandbox.x["`+strings.Repeat("k", 80)+`"]`, 9999, "postgres"), 63; len(got) > long {
		t.Errorf("name %q is %d characters, over the DNS label limit", got, len(got))
	}
	// Addresses that sanitize to the same text still get distinct names.
	a, b := instanceName(lineage, `sandbox.a["b"]`, 1), instanceName(lineage, "sandbox.a-b", 1)
	if a == b {
		t.Errorf("distinct addresses share the instance name %q", a)
	}
}

func TestLineageNetworkName(t *testing.T) {
	tests := []struct{ lineage, want string }{
		{"0123456789abcdef0123456789abcdef", "sbx-net-0123456789abcdef0123456789abcdef"},
		{"Lineage/1", "sbx-net-lineage-1-" + sha256Hex("Lineage/1")[:8]},
		{"//", "sbx-net-x-" + sha256Hex("//")[:8]},
		{strings.Repeat("a", 50), "sbx-net-" + strings.Repeat("a", 24) + "-" + sha256Hex(strings.Repeat("a", 50))[:8]},
	}
	for _, tt := range tests {
		got := lineageNetworkName(tt.lineage)
		if got != tt.want {
			t.Errorf("lineageNetworkName(%q) = %q, want %q", tt.lineage, got, tt.want)
		}
		if !dockerName.MatchString(got) {
			t.Errorf("lineageNetworkName(%q) = %q is not a valid Docker name", tt.lineage, got)
		}
	}
	// Lineages that differ only after the 8 characters container names
	// keep must not share a network.
	if lineageNetworkName("abcdefgh-1") == lineageNetworkName("abcdefgh-2") {
		t.Error("lineages sharing a prefix share a network name")
	}
}

func hash6(s string) string { return sha256Hex(s)[:6] }

func TestServiceErrorQuotesLog(t *testing.T) {
	e := &serviceError{Service: "redis", Container: "sbx-x", Err: errExited, Log: "line one\nline two\r"}
	want := "redis (container sbx-x): container exited\ncontainer log (last 20 lines):\n  | line one\n  | line two"
	if diff := cmp.Diff(want, e.Error()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if !errors.Is(e, errExited) {
		t.Error("serviceError does not unwrap")
	}
}

func TestSCRAMVerifierShape(t *testing.T) {
	v, err := scramVerifier("pencil")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$`)
	if !re.MatchString(v) || strings.Contains(v, "pencil") {
		t.Errorf("unexpected verifier %q", v)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

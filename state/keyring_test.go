package state

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestKeyringFromEnv(t *testing.T) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rawFile := write("raw", raw)
	b64File := write("b64", []byte(base64.StdEncoding.EncodeToString(raw)+"\n"))
	phraseFile := write("phrase", []byte("a passphrase long enough\n"))
	wantID := keyID(raw)
	tests := []struct {
		name    string
		env     map[string]string
		id      string // current key id; "phrase" for a passphrase
		sealing bool
		err     string
	}{
		{name: "none", env: nil},
		{name: "base64", env: map[string]string{EnvStateKey: base64.StdEncoding.EncodeToString(raw)}, id: wantID, sealing: true},
		{name: "base64url unpadded", env: map[string]string{EnvStateKey: base64.RawURLEncoding.EncodeToString(raw)}, id: wantID, sealing: true},
		{name: "hex", env: map[string]string{EnvStateKey: hex.EncodeToString(raw)}, id: wantID, sealing: true},
		{name: "passphrase", env: map[string]string{EnvStateKey: "correct horse battery staple"}, id: "phrase", sealing: true},
		{name: "short passphrase", env: map[string]string{EnvStateKey: "tooshort"}, err: "neither a 32-byte key"},
		{name: "raw key file", env: map[string]string{EnvStateKeyFile: rawFile}, id: wantID, sealing: true},
		{name: "base64 key file", env: map[string]string{EnvStateKeyFile: b64File}, id: wantID, sealing: true},
		{name: "passphrase file", env: map[string]string{EnvStateKeyFile: phraseFile}, id: "phrase", sealing: true},
		{name: "missing file", env: map[string]string{EnvStateKeyFile: filepath.Join(dir, "nope")}, err: "read the state key file"},
		{name: "both", env: map[string]string{EnvStateKey: hex.EncodeToString(raw), EnvStateKeyFile: rawFile}, err: "both SANDBOXER_STATE_KEY and SANDBOXER_STATE_KEY_FILE"},
		{name: "old only", env: map[string]string{EnvStateOldKey: hex.EncodeToString(raw)}, sealing: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := KeyringFromEnv(func(n string) string { return tt.env[n] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				for _, v := range tt.env {
					if strings.Contains(err.Error(), v) && !strings.HasPrefix(v, dir) {
						t.Fatalf("the error shows the key: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.Sealing() != tt.sealing {
				t.Fatalf("Sealing = %v, want %v", k.Sealing(), tt.sealing)
			}
			switch tt.id {
			case "phrase":
				if !k.NeedsSalt() {
					t.Fatal("a passphrase needs no salt")
				}
				k.UseSalt([]byte("0123456789abcdef0123456789abcdef"))
				id := k.CurrentKeyID()
				k.UseSalt([]byte("another salt of thirty-two bytes"))
				if id == "" || id == k.CurrentKeyID() {
					t.Fatalf("passphrase key ids %q and %q: want distinct per salt", id, k.CurrentKeyID())
				}
			default:
				if got := k.CurrentKeyID(); got != tt.id {
					t.Fatalf("key id %q, want %q", got, tt.id)
				}
			}
		})
	}
}

// Sealing is bound to the place: a sealed password moved to another
// record or field does not open.
func TestSealBoundToPlace(t *testing.T) {
	k, err := NewKeyring(hex.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Address: "sandbox.a", Credentials: map[string]Credentials{"postgres": {Password: "pw-1", AdminPassword: "pw-2"}}}
	sealed, err := sealRecord(rec, k)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Credentials["postgres"].Password != "pw-1" {
		t.Fatal("sealRecord modified its input")
	}
	c := sealed.Credentials["postgres"]
	if !strings.HasPrefix(string(c.Password), sealedPrefix) || strings.Contains(string(c.Password), "pw-1") {
		t.Fatalf("password not sealed: %q", c.Password)
	}
	again, _ := sealRecord(rec, k)
	if again.Credentials["postgres"].Password != c.Password {
		t.Fatal("sealing the same secret twice gave different bytes (the serial would move on every write)")
	}
	moved := &Record{Address: "sandbox.b", Credentials: map[string]Credentials{"postgres": c}}
	if err := unsealRecord("test", moved, k); err == nil {
		t.Fatal("a secret moved to another record opened")
	}
	swapped := &Record{Address: "sandbox.a", Credentials: map[string]Credentials{"postgres": {Password: c.AdminPassword, AdminPassword: c.Password}}}
	if err := unsealRecord("test", swapped, k); err == nil {
		t.Fatal("secrets swapped between fields opened")
	}
	ok := &Record{Address: "sandbox.a", Credentials: map[string]Credentials{"postgres": c}}
	if err := unsealRecord("test", ok, k); err != nil || ok.Credentials["postgres"].Password != "pw-1" || ok.Credentials["postgres"].AdminPassword != "pw-2" {
		t.Fatalf("unseal = %v, %+v", err, ok.Credentials["postgres"])
	}
}

// Every Secret field of a record is sealed: a Secret added to Credentials
// (or anywhere in Record) without being taught to secretFields fails here.
func TestEverySecretFieldIsSealed(t *testing.T) {
	var c Credentials
	sealed := secretFields(&c)
	secretType := reflect.TypeOf(Secret(""))
	ct := reflect.TypeOf(c)
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Type != secretType {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if _, ok := sealed[name]; !ok {
			t.Errorf("Credentials.%s is a Secret that sealRecord does not seal", f.Name)
		}
	}
	rt := reflect.TypeOf(Record{})
	for i := range rt.NumField() {
		if rt.Field(i).Type == secretType {
			t.Errorf("Record.%s is a Secret outside Credentials: sealRecord does not seal it", rt.Field(i).Name)
		}
	}
}

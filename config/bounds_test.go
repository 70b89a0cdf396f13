package config

import (
	"strings"
	"testing"
	"time"
)

// TestLongValuesAreNotEchoed: a megabyte value is blamed by location and
// quoted only by a short prefix.
func TestLongValuesAreNotEchoed(t *testing.T) {
	long := strings.Repeat("9", 1<<20) + "x"
	cases := map[string]string{
		"ttl":     `sandbox "s" {` + "\n" + `  project = project.p` + "\n" + `  ttl = "` + long + `"` + "\n}\n",
		"image":   `provider "docker" {` + "\n" + `  image "postgres" { ref = "` + long + `" }` + "\n}\n",
		"module":  `provider "docker" {` + "\n" + `  image "redis" {` + "\n" + `    ref = "redis:7"` + "\n" + `    modules = { search = "/` + long + ` " }` + "\n  }\n}\n",
		"service": `sandbox "s" {` + "\n" + `  project = project.p` + "\n" + `  services = ["` + long + `"]` + "\n}\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			src := "project \"p\" {\n  services = [\"postgres\", \"redis\"]\n}\n" + body
			_, diags := LoadSources("", map[string][]byte{"main.sbx.hcl": []byte(src)}, Input{}, nil)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			for _, d := range diags {
				if d.Subject == nil || d.Subject.Start.Line < 4 {
					t.Errorf("error not located in the block: %s", describe(d))
				}
				if n := len(d.Summary) + len(d.Detail); n > 1000 {
					t.Errorf("diagnostic is %d bytes long: %.300s…", n, d.Detail)
				}
			}
		})
	}
}

func TestParseTTLBounded(t *testing.T) {
	for _, tc := range []struct {
		in    string
		never bool
		want  time.Duration
		err   string
	}{
		{in: "1m", want: time.Minute},
		{in: "30d", want: MaxTTL},
		{in: "0", never: true, want: 0},
		{in: "0", err: "shorter than the minimum of 1m"},
		{in: "0s", never: true, err: `shorter than the minimum of 1m; write "0" for a sandbox that never expires`},
		{in: "1ns", err: "shorter than the minimum of 1m"},
		{in: "59s", err: "shorter than the minimum of 1m"},
		{in: "30d1s", err: "longer than the maximum of 30d"},
		{in: "-1h", err: "must not be negative"},
	} {
		got, err := ParseTTLBounded(tc.in, tc.never)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseTTLBounded(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseTTLBounded(%q) error %v; want %q", tc.in, err, tc.err)
		}
	}
}

func TestCheckImageRef(t *testing.T) {
	for ref, ok := range map[string]bool{
		"postgres:17":                             true,
		"sandboxer.local/postgres:17":             true,
		"localhost:5000/team/redis:7":             true,
		"redis@sha256:" + strings.Repeat("a", 64): true,
		"--privileged":                            false,
		"Postgres:17":                             false,
		"postgres:17 --privileged":                false,
		"postgres:":                               false,
	} {
		if err := CheckImageRef(ref); (err == nil) != ok {
			t.Errorf("CheckImageRef(%q) = %v", ref, err)
		}
	}
}

func TestCheckModulePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/usr/lib/redis/modules/redisearch.so":  true,
		"redisearch.so":                         false,
		"/usr/lib/../lib/x.so":                  false,
		"/usr/lib/x.so\n--loadmodule /tmp/y.so": false,
		"/usr/lib/re json.so":                   false,
		"":                                      false,
	} {
		if err := CheckModulePath(p); (err == nil) != ok {
			t.Errorf("CheckModulePath(%q) = %v", p, err)
		}
	}
}

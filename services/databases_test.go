package services

import "testing"

// The service that hosts databases per test is the catalogue's first
// the block runs, whatever the order it lists them in.
func TestDatabaseHostOf(t *testing.T) {
	for _, c := range []struct {
		svcs []string
		want string
	}{
		{[]string{"postgres"}, "postgres"},
		{[]string{"redis", "mysql"}, "mysql"},
		{[]string{"mysql", "postgres"}, "postgres"},
		{[]string{"redis", "valkey"}, ""},
		{nil, ""},
	} {
		name, host, ok := DatabaseHostOf(c.svcs)
		if name != c.want || ok != (c.want != "") || ok != (host != nil) {
			t.Errorf("DatabaseHostOf(%v) = %q, %v, %v; want %q", c.svcs, name, host, ok, c.want)
		}
	}
}

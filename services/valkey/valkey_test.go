package valkey

import (
	"slices"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

func TestServerArgs(t *testing.T) {
	args := ServerArgs("/s/users.acl")
	for _, want := range [][]string{
		{"--aclfile", "/s/users.acl"},
		{"--enable-module-command", "no"},
		{"--enable-debug-command", "no"},
		{"--save", ""},
	} {
		i := slices.Index(args, want[0])
		if i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
			t.Errorf("ServerArgs lacks %v: %q", want, args)
		}
	}
}

func TestModules(t *testing.T) {
	if got := Allowed(); !slices.Equal(got, []string{"bloom", "json", "search"}) {
		t.Errorf("Allowed() = %v", got)
	}
	if got := ModuleNames("bloom"); !slices.Equal(got, []string{"bf"}) {
		t.Errorf("ModuleNames(bloom) = %v", got)
	}
	if got := ModuleNames("timeseries"); got != nil {
		t.Errorf("ModuleNames(timeseries) = %v, want none (not allowlisted)", got)
	}
}

func TestURL(t *testing.T) {
	c := state.Credentials{User: "app", Password: "p@ss/word"}
	if got, want := URL(c, "127.0.0.1", 6379), "redis://app:p%40ss%2Fword@127.0.0.1:6379/0"; got != want {
		t.Errorf("URL = %s, want %s", got, want)
	}
	c.CA = "PEM"
	if got := URL(c, "::1", 1); got != "rediss://app:p%40ss%2Fword@[::1]:1/0" {
		t.Errorf("TLS URL = %s", got)
	}
}

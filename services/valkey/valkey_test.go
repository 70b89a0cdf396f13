package valkey

import (
	"slices"
	"testing"
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

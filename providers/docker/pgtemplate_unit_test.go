package docker

import (
	"slices"
	"testing"

	"github.com/docker/docker/api/types/image"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
)

// TestTemplateKey: every input that shapes a template changes its key;
// the order of the environment does not.
func TestTemplateKey(t *testing.T) {
	owner := fileOwner{UID: 999, GID: 999}
	env := []string{"A=1", "B=2"}
	cmd := []string{"postgres", "-c", "fsync=off"}
	base := templateKey("", "sha256:1", owner, env, cmd)
	for name, k := range map[string]string{
		"image":    templateKey("", "sha256:2", owner, env, cmd),
		"owner":    templateKey("", "sha256:1", fileOwner{UID: 70, GID: 70}, env, cmd),
		"env":      templateKey("", "sha256:1", owner, []string{"A=1", "B=3"}, cmd),
		"cmd":      templateKey("", "sha256:1", owner, env, []string{"postgres"}),
		"salt":     templateKey("x", "sha256:1", owner, env, cmd),
		"boundary": templateKey("", "sha256:1", owner, []string{"A=1"}, append([]string{"B=2"}, cmd...)),
	} {
		if k == base {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	if templateKey("", "sha256:1", owner, sortedEnv([]string{"B=2", "A=1"}), cmd) != base {
		t.Error("the environment's order changes the key")
	}
}

// TestTemplateSpec: a sandbox from a template runs as the service user,
// the start script first and the image's entrypoint and command after it,
// with no password file, the template read-only, and a tmpfs data
// directory the service user owns.
func TestTemplateSpec(t *testing.T) {
	ii := image.InspectResponse{Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Entrypoint: []string{"docker-entrypoint.sh"}}}}
	spec := containerSpec{
		Env:   []string{"POSTGRES_USER=sbx_admin", "POSTGRES_PASSWORD_FILE=/etc/sandboxer/postgres-password"},
		Cmd:   []string{"postgres", "-c", "fsync=off"},
		Tmpfs: map[string]string{"/var/lib/postgresql/data": "", "/other": ""},
	}
	got := templateSpec(spec, ii, fileOwner{UID: 999, GID: 998}, "/var/lib/postgresql/data", &pgTemplate{Volume: "tpl"})
	if got.User != "999:998" || !slices.Equal(got.Entrypoint, []string{"/bin/sh", secretPath(templateStartScript)}) ||
		!slices.Equal(got.Cmd, []string{"docker-entrypoint.sh", "postgres", "-c", "fsync=off"}) {
		t.Errorf("user %q entrypoint %q cmd %q", got.User, got.Entrypoint, got.Cmd)
	}
	if slices.ContainsFunc(got.Env, func(e string) bool { return e == spec.Env[1] }) || !slices.Contains(got.Env, "PGDATA=/var/lib/postgresql/data") {
		t.Errorf("env %q", got.Env)
	}
	if got.Tmpfs["/var/lib/postgresql/data"] != "uid=999,gid=998,mode=0700" || got.Tmpfs["/other"] != "" {
		t.Errorf("tmpfs %v", got.Tmpfs)
	}
	if len(got.Mounts) != 1 || got.Mounts[0].Source != "tpl" || got.Mounts[0].Target != pgsvc.TemplateMount || !got.Mounts[0].ReadOnly {
		t.Errorf("mounts %+v", got.Mounts)
	}
	if spec.Env[1] != "POSTGRES_PASSWORD_FILE=/etc/sandboxer/postgres-password" || spec.Tmpfs["/var/lib/postgresql/data"] != "" {
		t.Error("templateSpec changed its input")
	}
	single := pgsvc.SingleUserArgs(append(slices.Clone(spec.Cmd), postgresTLSArgs()...))
	if !slices.Equal(single, []string{"-c", "fsync=off"}) {
		t.Errorf("single-user args keep TLS: %q", single)
	}
}

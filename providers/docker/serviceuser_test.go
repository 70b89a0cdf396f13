package docker

import (
	"testing"

	redissvc "github.com/sandboxer/sandboxer/services/redis"

	"github.com/docker/docker/api/types/image"
	"github.com/google/go-cmp/cmp"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
)

const (
	debianPasswd = "root:x:0:0:root:/root:/bin/bash\npostgres:x:999:999::/var/lib/postgresql:/bin/bash\n"
	alpinePasswd = "root:x:0:0:root:/root:/bin/sh\n# comment\nbroken line\npostgres:x:70:70:PostgreSQL user:/var/lib/postgresql:/bin/sh\nredis:x:100:101:redis:/data:/sbin/nologin\nalt:x:70:71::/:/bin/sh\n"
	alpineGroup  = "root:x:0:root\npostgres:x:70:\nredis:x:101:redis\nstaff:x:50:\n"
)

func TestResolveOwner(t *testing.T) {
	for _, tc := range []struct {
		name, user, account, passwd, group string
		want                               fileOwner
		wantErr                            bool
	}{
		{name: "debian account", account: "postgres", passwd: debianPasswd, want: fileOwner{999, 999}},
		{name: "alpine account", account: "postgres", passwd: alpinePasswd, group: alpineGroup, want: fileOwner{70, 70}},
		{name: "alpine redis", account: "redis", passwd: alpinePasswd, want: fileOwner{100, 101}},
		{name: "root USER uses the account", user: "root", account: "postgres", passwd: alpinePasswd, want: fileOwner{70, 70}},
		{name: "uid 0 USER uses the account", user: "0:0", account: "postgres", passwd: alpinePasswd, want: fileOwner{70, 70}},
		{name: "USER by name", user: "redis", account: "postgres", passwd: alpinePasswd, want: fileOwner{100, 101}},
		{name: "USER by uid, gid from passwd (first entry)", user: "70", account: "redis", passwd: alpinePasswd, want: fileOwner{70, 70}},
		{name: "USER uid unknown to passwd", user: "1001", account: "postgres", passwd: debianPasswd, want: fileOwner{1001, 0}},
		{name: "USER uid:gid", user: "1001:1002", account: "postgres", passwd: debianPasswd, want: fileOwner{1001, 1002}},
		{name: "USER name:group", user: "postgres:staff", account: "redis", passwd: alpinePasswd, group: alpineGroup, want: fileOwner{70, 50}},
		{name: "no account, no USER: root", account: "postgres", passwd: "root:x:0:0::/:/bin/sh\n", want: fileOwner{0, 0}},
		{name: "no passwd at all", account: "postgres", want: fileOwner{0, 0}},
		{name: "USER unknown name", user: "nobody", account: "postgres", passwd: debianPasswd, wantErr: true},
		{name: "USER unknown group", user: "postgres:wheel", account: "postgres", passwd: debianPasswd, group: "root:x:0:\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveOwner(tc.user, tc.account, []byte(tc.passwd), []byte(tc.group))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("owner = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadModuleArgs(t *testing.T) {
	modules := map[string]string{"search": "/m/search.so", "json": "/m/json.so"}
	for _, tc := range []struct {
		name       string
		feats      []string
		selfLoaded []string
		want       []string
	}{
		{name: "configured", feats: []string{"json", "search"}, want: []string{"--loadmodule", "/m/json.so", "--loadmodule", "/m/search.so"}},
		{name: "the image loads search itself", feats: []string{"json", "search"}, selfLoaded: []string{"search"}, want: []string{"--loadmodule", "/m/json.so"}},
		{name: "built in, no path", feats: []string{"bloom"}, selfLoaded: []string{"bloom"}},
		{name: "not requested", feats: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, redissvc.LoadModuleArgs(tc.feats, modules, tc.selfLoaded)); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPGDataMounts(t *testing.T) {
	img := func(volumes ...string) image.InspectResponse {
		ii := image.InspectResponse{Config: &dockerspec.DockerOCIImageConfig{}}
		ii.Config.Volumes = map[string]struct{}{}
		for _, v := range volumes {
			ii.Config.Volumes[v] = struct{}{}
		}
		return ii
	}
	for _, tc := range []struct {
		name, pgdata string
		ii           image.InspectResponse
		storage      string
		wantTmpfs    map[string]string
		wantVolumes  []string
	}{
		{name: "tmpfs storage, no VOLUME", pgdata: "/var/lib/postgresql/data", ii: img(), storage: "tmpfs",
			wantTmpfs: map[string]string{"/var/lib/postgresql/data": ""}},
		{name: "tmpfs storage, PGDATA below the VOLUME", pgdata: "/var/lib/postgresql/18/docker", ii: img("/var/lib/postgresql", "/backup"), storage: "tmpfs",
			wantTmpfs: map[string]string{"/var/lib/postgresql": "", "/backup": ""}},
		{name: "no VOLUME (local images)", pgdata: "/var/lib/postgresql/data", ii: img(),
			wantTmpfs: map[string]string{}, wantVolumes: []string{"/var/lib/postgresql/data"}},
		{name: "postgres:17 VOLUME is PGDATA", pgdata: "/var/lib/postgresql/data", ii: img("/var/lib/postgresql/data"),
			wantTmpfs: map[string]string{}, wantVolumes: []string{"/var/lib/postgresql/data"}},
		{name: "postgres:18 PGDATA below the VOLUME", pgdata: "/var/lib/postgresql/18/docker", ii: img("/var/lib/postgresql"),
			wantTmpfs: map[string]string{}, wantVolumes: []string{"/var/lib/postgresql"}},
		{name: "other VOLUMEs get a tmpfs", pgdata: "/var/lib/postgresql/18/docker", ii: img("/var/lib/postgresql", "/var/lib/postgresql-other", "/backup"),
			wantTmpfs: map[string]string{"/var/lib/postgresql-other": "", "/backup": ""}, wantVolumes: []string{"/var/lib/postgresql"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storage := tc.storage
			if storage == "" {
				storage = "volume"
			}
			tmpfs, volumes := dataMounts(tc.ii, tc.pgdata, storage)
			if diff := cmp.Diff(tc.wantTmpfs, tmpfs); diff != "" {
				t.Errorf("tmpfs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantVolumes, volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
		})
	}
}

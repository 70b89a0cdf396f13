package kubernetes

import (
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	mysqlsvc "github.com/sandboxer/sandboxer/services/mysql"
	"github.com/sandboxer/sandboxer/state"
)

// A mysql instance's pod is built from services/mysql's Start alone: the
// entrypoint's options with the data root on the pod's data emptyDir, the
// root password as a file from the Secret (never in the environment or
// the args), the init script mounted among the image's, an empty
// read-only directory for secure_file_priv.
func TestMySQLObjects(t *testing.T) {
	p := fakeProvider(t, fake.NewClientset())
	req := apply.CreateRequest{Address: "sandbox.my", Lineage: "6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4c", Generation: 1,
		Features: config.FeatureSet{"mysql": {"archive"}}, Database: "shop"}
	b := &build{req: req, ns: p.ns, name: podName(req.Lineage, req.Address, req.Generation),
		services: []string{"mysql"}, creds: map[string]state.Credentials{}, available: map[string][]string{}, versions: map[string]map[string]string{},
		images: map[string]config.Image{"mysql": {Ref: "sandboxer.local/mysql:11.8"}},
		facts:  map[string]imageFacts{"mysql": {UID: 999, GID: 999}}}
	app, _ := redact.NewPassword()
	admin, _ := redact.NewPassword()
	b.creds["mysql"] = state.Credentials{User: appUser, Password: app, AdminUser: adminUser, AdminPassword: admin, Database: "shop"}
	secret, pod, _, err := p.objects(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("containers: %d", len(pod.Spec.Containers))
	}
	ctr := pod.Spec.Containers[0]
	if len(ctr.Args) == 0 || ctr.Args[0] != "--datadir="+dataRoot || !strings.Contains(strings.Join(ctr.Args, " "), "--local-infile=0") {
		t.Errorf("mysql args: %q", ctr.Args)
	}
	for _, e := range ctr.Env {
		if strings.Contains(e.Value, app.Reveal()) || strings.Contains(e.Value, admin.Reveal()) {
			t.Errorf("a password in the environment: %s", e.Name)
		}
	}
	for _, a := range ctr.Args {
		if strings.Contains(a, app.Reveal()) || strings.Contains(a, admin.Reveal()) {
			t.Error("a password in the args")
		}
	}
	if string(secret.Data[mysqlsvc.PasswordFile]) != admin.Reveal() {
		t.Error("the Secret has no root password file")
	}
	init := string(secret.Data[mysqlsvc.InitScriptName])
	if !strings.Contains(init, "CREATE USER '"+appUser+"'@'%'") || strings.Contains(init, app.Reveal()) {
		t.Errorf("the Secret's init script is not services/mysql's (or holds a clear password)")
	}
	mounts := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.MountPath] = m.ReadOnly
	}
	if ro, ok := mounts[mysqlsvc.SecureFilePrivDir]; !ok || !ro {
		t.Errorf("no read-only mount at %s: %v", mysqlsvc.SecureFilePrivDir, mounts)
	}
	if ro, ok := mounts[dataRoot]; !ok || ro {
		t.Errorf("no writable data mount at %s: %v", dataRoot, mounts)
	}
	if _, ok := mounts[mysqlsvc.InitDir+"/"+mysqlsvc.InitScriptName]; !ok {
		t.Errorf("init script not mounted: %v", mounts)
	}
}

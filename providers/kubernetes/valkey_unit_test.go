package kubernetes

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/state"
)

// A valkey instance's pod is built from services/valkey's Start alone:
// valkey-server with its ACL file from the Secret, module and debug
// commands off, and its container sees only its own key.
func TestValkeyObjects(t *testing.T) {
	p := fakeProvider(t, fake.NewClientset())
	req := apply.CreateRequest{Address: "sandbox.vk", Lineage: "6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4c", Generation: 1,
		Features: config.FeatureSet{"valkey": {}}}
	b := &build{req: req, ns: p.ns, name: podName(req.Lineage, req.Address, req.Generation),
		services: []string{"valkey"}, creds: map[string]state.Credentials{}, available: map[string][]string{}, versions: map[string]map[string]string{},
		images: map[string]config.Image{"valkey": {Ref: "sandboxer.local/valkey:8"}},
		facts:  map[string]imageFacts{"valkey": {UID: 999, GID: 999}}}
	app, _ := redact.NewPassword()
	admin, _ := redact.NewPassword()
	b.creds["valkey"] = state.Credentials{User: appUser, Password: app, AdminUser: adminUser, AdminPassword: admin}
	secret, pod, _, err := p.objects(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("containers: %d", len(pod.Spec.Containers))
	}
	args := pod.Spec.Containers[0].Args
	joined := strings.Join(args, " ")
	if len(args) == 0 || args[0] != "valkey-server" || !strings.Contains(joined, "--enable-module-command no") ||
		!strings.Contains(joined, "--enable-debug-command no") || !strings.Contains(joined, "valkey-users.acl") {
		t.Errorf("valkey args: %q", args)
	}
	acl := string(secret.Data["valkey-users.acl"])
	if !strings.Contains(acl, "user default off") || !strings.Contains(acl, "user "+appUser+" ") || strings.Contains(acl, app.Reveal()) {
		t.Errorf("the Secret's ACL file is not services/valkey's (or holds a clear password)")
	}
	seen := false
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		var keys []string
		for _, it := range v.Secret.Items {
			keys = append(keys, it.Key)
		}
		if v.Name == "secret-valkey" {
			seen = true
			if !slices.Equal(keys, []string{"valkey-users.acl"}) {
				t.Errorf("valkey sees %v", keys)
			}
		}
	}
	if !seen {
		t.Error("no secret volume for valkey")
	}
}

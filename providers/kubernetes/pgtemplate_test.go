package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

// templateMaps lists the ConfigMaps of the templates of p's salt (every
// key of this provider), manifests and parts.
func templateMaps(t *testing.T, p *Provider, key string) []corev1.ConfigMap {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{LabelTemplate: pgsvc.Name, labelTemplateKey: key}).String()
	l, err := p.cs.CoreV1().ConfigMaps(p.ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	mustf(t, err, "list template configmaps")
	return l.Items
}

// removeTemplatesOf deletes every template ConfigMap of key (the test's
// own, salted).
func removeTemplatesOf(t *testing.T, p *Provider, key string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, sel := range []labels.Set{{LabelTemplate: pgsvc.Name, labelTemplateKey: key}, {LabelTemplate: "lock", labelTemplateKey: key}} {
			l, err := p.cs.CoreV1().ConfigMaps(p.ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
			if err != nil {
				t.Errorf("cleanup: %v", err)
				continue
			}
			for _, cm := range l.Items {
				_ = p.cs.CoreV1().ConfigMaps(p.ns).Delete(ctx, cm.Name, metav1.DeleteOptions{})
			}
		}
	})
}

// A template on Kubernetes: four concurrent first creates of one image
// (two providers, as two processes would be) make one template; every
// sandbox starts from it (the start script runs, not initdb); no sandbox
// accepts another's credentials or the template's; a template whose
// archive does not add up is found by the start script and rebuilt, not
// started.
func TestTemplateOnKubernetes(t *testing.T) {
	t.Parallel()
	p1, _ := newTestProvider(t)
	p2, _ := newTestProvider(t)
	salt := fmt.Sprintf("test-%d-", time.Now().UnixNano())
	p1.templateSalt, p2.templateSalt = salt, salt
	lineage := newLineage(t, p1)
	pgOnly := config.FeatureSet{"postgres": {}}

	var wg sync.WaitGroup
	recs := make([]*state.Record, 4)
	errs := make([]error, 4)
	for i := range recs {
		p := p1
		if i%2 == 1 {
			p = p2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			req := apply.CreateRequest{Address: fmt.Sprintf("sandbox.tpl%d", i), Lineage: lineage, Generation: 1, Features: pgOnly}
			c, err := p.Create(ctx, req)
			if err != nil {
				errs[i] = err
				return
			}
			recs[i] = &state.Record{Address: req.Address, Services: []string{"postgres"}, Features: pgOnly, Credentials: c.Credentials, Resources: c.Resources, Generation: 1}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	b := &build{req: apply.CreateRequest{Features: pgOnly}, facts: map[string]imageFacts{}, images: map[string]config.Image{},
		creds: map[string]state.Credentials{"postgres": recs[0].Credentials["postgres"]}}
	img, err := p1.cfg.ImageForRef("postgres", "", nil)
	mustf(t, err, "image")
	b.images["postgres"] = img
	b.facts["postgres"], err = p1.imageFacts(ctxFor(t, time.Minute), "postgres", img)
	mustf(t, err, "facts")
	in, ok := p1.pgTemplateInput(b)
	if !ok {
		t.Fatal("templates are off for the test image")
	}
	removeTemplatesOf(t, p1, in.key)
	maps := templateMaps(t, p1, in.key)
	builds := map[string]bool{}
	manifests := 0
	for _, cm := range maps {
		builds[cm.Labels[labelTemplateBuild]] = true
		if cm.Name == templateName(in.key) {
			manifests++
		}
	}
	if manifests != 1 || len(builds) != 1 {
		t.Fatalf("four concurrent first uses made %d manifests of %d builds, want one of one (%d configmaps)", manifests, len(builds), len(maps))
	}

	ctx := ctxFor(t, 2*time.Minute)
	for i, rec := range recs {
		pod, err := p1.cs.CoreV1().Pods(p1.ns).Get(ctx, rec.Resources.Pod, metav1.GetOptions{})
		mustf(t, err, "get pod %d", i)
		if cmd := pod.Spec.Containers[0].Command; len(cmd) != 2 || cmd[1] != secretDir+"/"+keyTemplateStart {
			t.Errorf("sandbox %d did not start from the template: command %q", i, cmd)
		}
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "POSTGRES_PASSWORD" {
					t.Errorf("sandbox %d's pod spec carries a password", i)
				}
			}
		}
		// Its own credentials work (Create probed them); another
		// sandbox's do not, for the app role or the admin.
		pg, other := rec.Credentials["postgres"], recs[(i+1)%len(recs)].Credentials["postgres"]
		for _, who := range []struct{ user, db string }{{other.User, pg.Database}, {other.AdminUser, "postgres"}} {
			pw := other.Password
			if who.user == other.AdminUser {
				pw = other.AdminPassword
			}
			if conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, who.user, pw, who.db, nil); err == nil {
				conn.Close(ctx)
				t.Errorf("sandbox %d accepts sandbox %d's %s password", i, (i+1)%len(recs), who.user)
			}
		}
		conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
		mustf(t, err, "sandbox %d's own login", i)
		var ext int
		mustf(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", pg.Database).Scan(&ext), "query")
		conn.Close(ctx)
		if ext != 1 {
			t.Errorf("sandbox %d has no database %s", i, pg.Database)
		}
	}
	for _, rec := range recs {
		mustf(t, p1.Delete(ctx, rec), "delete %s", rec.Address)
	}
	// Damage: the archive no longer adds up to what the manifest says
	// (a part altered; here the manifest's sum, since the kubelet keeps
	// serving an immutable part it has cached for a while after it is
	// removed). A new process reads the manifest, the pod is made, the
	// start script finds the archive damaged and exits before any server
	// starts, and Create rebuilds.
	patch := []byte(`{"data":{"sha256":"` + strings.Repeat("0", 64) + `"}}`)
	_, err = p1.cs.CoreV1().ConfigMaps(p1.ns).Patch(ctx, templateName(in.key), types.MergePatchType, patch, metav1.PatchOptions{})
	mustf(t, err, "alter the manifest")
	p1.pgtpl.forget(in.key)
	oldBuild := ""
	for b := range builds {
		oldBuild = b
	}
	rec := createInstance(t, p1, apply.CreateRequest{Address: "sandbox.afterdamage", Lineage: lineage, Generation: 1, Features: pgOnly})
	pg := rec.Credentials["postgres"]
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	mustf(t, err, "login after the rebuild")
	conn.Close(ctx)
	tpl, err := p1.findTemplate(ctx, in.key)
	mustf(t, err, "find the template")
	if tpl == nil || tpl.Build == oldBuild {
		t.Errorf("the damaged template was not rebuilt (build %v, was %s)", tpl, oldBuild)
	}
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apiclient"
	"github.com/sandboxer/sandboxer/internal/tenants"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

// Pods as tenants, on the real cluster: serve --kube-auth verifies
// projected ServiceAccount tokens by TokenReview. A token for audience
// sandboxer of an admitted ServiceAccount requests a sandbox and sees
// only its own; the namespace's default rule ("ns:*") admits another
// ServiceAccount as another tenant; a token for another audience, one of
// a ServiceAccount no rule admits, and a non-token are 401; a deleted
// ServiceAccount's token is refused within the cache's 30 s; a serve
// whose own identity may not create tokenreviews answers 503; no log
// line holds a token or its hash. Every object it makes is deleted.
func TestServeKubeAuth(t *testing.T) {
	testenv.RequireDocker(t)
	kubeconfig := testenv.Kubeconfig(t)
	start := time.Now()
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	ns := "sbx-kauth-" + suffix
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"sandboxer.dev/test": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// The stranger lives in the tests' namespace, which no rule admits.
	otherNS := testenv.KubeNamespace()
	stranger := "sbx-kauth-stranger-" + suffix
	newSA := func(ns, name string) {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	newSA(ns, "runner")
	newSA(ns, "helper")
	newSA(otherNS, stranger)
	tokenFor := func(ns, name, audience string) string {
		t.Helper()
		exp := int64(600) // the shortest the API server grants
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			Audiences: []string{audience}, ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s/%s: %v", ns, name, err)
		}
		return tr.Status.Token
	}
	runnerTok := tokenFor(ns, "runner", "sandboxer")
	runnerOther := tokenFor(ns, "runner", "other")
	helperTok := tokenFor(ns, "helper", "sandboxer")
	strangerTok := tokenFor(otherNS, stranger, "sandboxer")
	t.Logf("cluster objects and tokens: %s", time.Since(start).Round(time.Millisecond))

	dir := t.TempDir()
	writeConfig(t, dir, tenantsConfig)
	cleanupLineage(t, dir)
	admin := "adm-" + state.NewLineage()
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte(admin), 0o600); err != nil {
		t.Fatal(err)
	}
	tfile := "tenant \"runner\" {\n  service_accounts = [\"" + ns + ":runner\"]\n  quota {\n    instances = 2\n  }\n}\n" +
		"tenant \"team\" {\n  service_accounts = [\"" + ns + ":*\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "tenants.hcl"), []byte(tfile), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(name, kc string) (string, *syncBuffer) {
		t.Helper()
		addrFile := filepath.Join(dir, name+".addr")
		srv := sandboxerCmd(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0",
			"--token-file", "token.txt", "--tenants", "tenants.hcl", "--kube-auth", "--kubeconfig", kc)
		logs := &syncBuffer{}
		srv.Stdout, srv.Stderr = logs, logs
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = srv.Process.Signal(os.Interrupt)
			_ = srv.Wait()
		})
		return "http://" + waitAddrFile(t, addrFile), logs
	}
	base, logs := serve("admin", kubeconfig)
	call := func(base, token, method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	request := func(token, key string) api.Sandbox {
		t.Helper()
		status, data := call(base, token, "POST", api.PathRequest, `{"address":"sandbox.agent","key":"`+key+`"}`)
		var sbx api.Sandbox
		if status != 200 || json.Unmarshal(data, &sbx) != nil {
			t.Fatalf("request: %d %s", status, data)
		}
		return sbx
	}
	list := func(token string) []string {
		t.Helper()
		status, data := call(base, token, "GET", api.PathSandboxes, "")
		var l api.SandboxList
		if status != 200 || json.Unmarshal(data, &l) != nil {
			t.Fatalf("list: %d %s", status, data)
		}
		var out []string
		for _, in := range l.Sandboxes {
			out = append(out, in.Address+" "+in.Owner)
		}
		slices.Sort(out)
		return out
	}

	rstart := time.Now()
	r := request(runnerTok, "dev-1")
	t.Logf("the runner's first request (a review and a cold start): %s", time.Since(rstart).Round(time.Millisecond))
	h := request(helperTok, "dev-1")
	if r.Address != `sandbox.agent["runner.dev-1"]` || h.Address != `sandbox.agent["team.dev-1"]` {
		t.Errorf("addresses %s and %s, want runner's and team's", r.Address, h.Address)
	}
	if got, want := list(runnerTok), []string{r.Address + " runner"}; !slices.Equal(got, want) {
		t.Errorf("the runner's list: %v, want %v", got, want)
	}
	if got, want := list(helperTok), []string{h.Address + " team"}; !slices.Equal(got, want) {
		t.Errorf("the helper's list: %v, want %v", got, want)
	}
	if got, want := list(admin), []string{r.Address + " runner", h.Address + " team"}; !slices.Equal(got, want) {
		t.Errorf("the operator's list: %v, want %v", got, want)
	}
	// The Go client reads a projected token from its file at each call.
	tokFile := filepath.Join(dir, "projected-token")
	if err := os.WriteFile(tokFile, []byte(runnerTok), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(base, "", apiclient.WithTokenFile(tokFile))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := client.List(ctx); err != nil || len(got) != 1 || got[0].Address != r.Address || got[0].Owner != "runner" {
		t.Errorf("the runner's list through apiclient with a token file: %v %+v", err, got)
	}
	if status, data := call(base, helperTok, "POST", api.PathExtend, `{"address":"`+strings.ReplaceAll(r.Address, `"`, `\"`)+`","ttl":"5m"}`); status != 404 {
		t.Errorf("the helper extending the runner's: %d %s, want 404", status, data)
	}
	// What a review costs a call: a new token's first call asks the
	// cluster, the next finds the answer kept.
	for i, what := range []string{"first call (a review)", "second call (kept)"} {
		cstart := time.Now()
		if status, _ := call(base, strangerTok, "GET", api.PathSandboxes, ""); status != 401 {
			t.Errorf("the stranger's call %d: %d", i, status)
		}
		t.Logf("a new ServiceAccount token's %s: %s", what, time.Since(cstart).Round(10*time.Microsecond))
	}
	for name, tok := range map[string]string{"another audience": runnerOther, "a ServiceAccount no rule admits": strangerTok,
		"not a token": "not-a-token", "the hash of the runner's": tenants.Hash(runnerTok)} {
		if status, data := call(base, tok, "GET", api.PathSandboxes, ""); status != 401 || !strings.Contains(string(data), `"unauthorized"`) {
			t.Errorf("%s: %d %s, want 401", name, status, data)
		}
	}

	// A serve whose own identity may not create tokenreviews: 503.
	if restricted := filepath.Join(filepath.Dir(kubeconfig), "kubeconfig-restricted"); fileExists(restricted) {
		rbase, rlogs := serve("restricted", restricted)
		if status, data := call(rbase, runnerTok, "GET", api.PathSandboxes, ""); status != 503 || !strings.Contains(string(data), `"unavailable"`) {
			t.Errorf("serve without create on tokenreviews: %d %s, want 503", status, data)
		}
		// The log line is written after the answer: wait for it.
		logged := time.Now().Add(10 * time.Second)
		for !strings.Contains(rlogs.String(), "system:auth-delegator") && time.Now().Before(logged) {
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(rlogs.String(), "system:auth-delegator") {
			t.Errorf("the 503's log line does not say which binding is missing:\n%s", rlogs)
		}
		logs.Write([]byte(rlogs.String()))
	}

	// The runner's ServiceAccount is deleted: its token is refused once
	// the cached answer ends (30 s at most), the helper's still passes.
	if err := cs.CoreV1().ServiceAccounts(ns).Delete(ctx, "runner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitUntil(t, 45*time.Second, func() bool {
		status, _ := call(base, runnerTok, "GET", api.PathSandboxes, "")
		if status != 200 && status != 401 {
			t.Fatalf("the deleted ServiceAccount's token: %d", status)
		}
		time.Sleep(500 * time.Millisecond)
		return status == 401
	})
	refusedAfter := time.Since(deleted)
	if refusedAfter > 32*time.Second {
		t.Errorf("the deleted ServiceAccount's token was accepted for %s, want at most 30 s", refusedAfter)
	}
	t.Logf("a deleted ServiceAccount's token refused after %s", refusedAfter.Round(100*time.Millisecond))
	if got := list(helperTok); len(got) != 1 {
		t.Errorf("the helper after the runner's deletion: %v", got)
	}

	for _, addr := range []string{r.Address, h.Address} {
		if status, data := call(base, admin, "POST", api.PathRelease, `{"address":"`+strings.ReplaceAll(addr, `"`, `\"`)+`"}`); status != 200 {
			t.Errorf("release %s: %d %s", addr, status, data)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "serviceaccount="+ns+"/runner") || !strings.Contains(out, "no tenant admits this ServiceAccount") {
		t.Errorf("the log does not name the ServiceAccounts")
	}
	for _, tok := range []string{runnerTok, runnerOther, helperTok, strangerTok, admin} {
		parts := strings.Split(tok, ".")
		for _, s := range append(parts, strings.TrimPrefix(tenants.Hash(tok), "sha256:")) {
			if len(s) > 8 && strings.Contains(out, s) {
				t.Errorf("a log line holds a token, a part of one or its hash")
			}
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", out)
	}
	t.Logf("total %s", time.Since(start).Round(time.Second))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

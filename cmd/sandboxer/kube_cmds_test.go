package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

// Commands for the scenarios on a real cluster ([kube] scripts). Test
// code may link client-go's full clientset; the binaries may not
// (TestBinaryLinksNoKubernetes).
func kubeCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"kubenamespace": cmdKubeNamespace,
		"kubelabelled":  cmdKubeLabelled,
		"kubekill":      cmdKubeKill,
	}
}

func kubeClient(ts *testscript.TestScript) k8s.Interface {
	path := ts.Getenv("KUBECONFIG")
	if path == "" {
		ts.Fatalf("KUBECONFIG is not set in the script")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	ts.Check(err)
	cs, err := k8s.NewForConfig(cfg)
	ts.Check(err)
	return cs
}

// cmdKubeNamespace creates a namespace of the script's own and sets
// SBX_VAR_namespace to it (the scenario's configuration reads
// var.namespace); the namespace and all in it are deleted when the
// script ends, so no run collides with another.
//
//	kubenamespace
func cmdKubeNamespace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: kubenamespace")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "sbx-test-" + hex.EncodeToString(b[:])
	cs := kubeClient(ts)
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"sandboxer.dev/test": "true"}}}, metav1.CreateOptions{})
	ts.Check(err)
	// The namespace's default service account appears a moment later;
	// pods cannot be created before it does.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			ts.Fatalf("kubenamespace: service account of %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.Setenv("SBX_VAR_namespace", name)
	ts.Defer(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// cmdKubeLabelled counts the pods, Secrets, Services and NetworkPolicies
// of the state's lineage in the script's namespace:
//
//	kubelabelled STATEFILE N
func cmdKubeLabelled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: kubelabelled STATEFILE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	snap, err := state.Open(ts.MkAbs(args[0])).Snapshot(context.Background())
	ts.Check(err)
	if snap.Lineage == "" {
		ts.Fatalf("kubelabelled: %s has no lineage yet", args[0])
	}
	ns := ts.Getenv("SBX_VAR_namespace")
	cs := kubeClient(ts)
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: "sandboxer.dev/managed=true"}
	mine := func(m metav1.ObjectMeta) bool { return m.Annotations["sandboxer.dev/lineage"] == snap.Lineage }
	count := map[string]int{}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	ts.Check(err)
	for _, o := range pods.Items {
		if mine(o.ObjectMeta) && o.DeletionTimestamp == nil {
			count["pods"]++
		}
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, opts)
	ts.Check(err)
	for _, o := range secrets.Items {
		if mine(o.ObjectMeta) && o.DeletionTimestamp == nil {
			count["secrets"]++
		}
	}
	services, err := cs.CoreV1().Services(ns).List(ctx, opts)
	ts.Check(err)
	for _, o := range services.Items {
		if mine(o.ObjectMeta) && o.DeletionTimestamp == nil {
			count["services"]++
		}
	}
	policies, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, opts)
	ts.Check(err)
	for _, o := range policies.Items {
		if mine(o.ObjectMeta) && o.DeletionTimestamp == nil {
			count["networkpolicies"]++
		}
	}
	got := count["pods"] + count["secrets"] + count["services"] + count["networkpolicies"]
	if got != want {
		ts.Fatalf("kubelabelled: %d objects carry lineage %s in %s (%v), want %d", got, snap.Lineage, ns, count, want)
	}
}

// cmdKubeKill deletes an instance's pod at once, as a node failure or
// an operator would:
//
//	kubekill STATEFILE ADDR
func cmdKubeKill(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: kubekill STATEFILE ADDR")
	}
	rec, err := state.Open(ts.MkAbs(args[0])).Get(context.Background(), args[1])
	ts.Check(err)
	if rec == nil || rec.Resources.Pod == "" {
		ts.Fatalf("kubekill: %s has no pod in state", args[1])
	}
	cs := kubeClient(ts)
	ctx := context.Background()
	err = cs.CoreV1().Pods(rec.Resources.Namespace).Delete(ctx, rec.Resources.Pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	ts.Check(err)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := cs.CoreV1().Pods(rec.Resources.Namespace).Get(ctx, rec.Resources.Pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("kubekill: pod %s still there after 60 s", rec.Resources.Pod)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kubeAvailable says why the kube scenarios cannot run ("" when they
// can): the kubeconfig the environment names must exist.
func kubeAvailable() (kubeconfig, why string) {
	if testenv.KubeLater() {
		return "", "a scenario on the cluster: " + testenv.KubeLaterEnv + "=1 leaves it for the cluster's own pass"
	}
	for _, p := range []string{os.Getenv("KUBECONFIG"), "../../.kube/kubeconfig"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs := p
			if !strings.HasPrefix(p, "/") {
				wd, _ := os.Getwd()
				abs = wd + "/" + p
			}
			return abs, ""
		}
	}
	return "", fmt.Sprintf("no cluster: KUBECONFIG is %q and ../../.kube/kubeconfig is missing (make kube starts one)", os.Getenv("KUBECONFIG"))
}

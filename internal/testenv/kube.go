package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The Kubernetes tests run against a real cluster: the one KUBECONFIG
// names, else the local one `make kube` starts (its kubeconfig at
// .kube/kubeconfig in the repository). Without either they skip, unless
// SANDBOXER_REQUIRE_KUBE=1 (set by .ci/run), where that is a failure.
const (
	KubeRequireEnv = "SANDBOXER_REQUIRE_KUBE"
	// KubeNamespaceEnv names the namespace the tests use ("default"
	// without it).
	KubeNamespaceEnv = "SANDBOXER_TEST_KUBE_NAMESPACE"
)

// KubeLaterEnv, set to 1, makes every test that needs a cluster skip,
// whatever cluster there is: .ci/run runs the suite's other tests while
// the cluster builds, then the cluster's tests alone (KubeRequireEnv).
const KubeLaterEnv = "SANDBOXER_TEST_KUBE_LATER"

// KubeLater reports whether the cluster's tests are to skip (KubeLaterEnv).
func KubeLater() bool {
	v := os.Getenv(KubeLaterEnv)
	return v != "" && v != "0" && v != "false"
}

// KubeRequired reports whether the environment demands a cluster.
func KubeRequired() bool {
	v := os.Getenv(KubeRequireEnv)
	return v != "" && v != "0" && v != "false"
}

// Kubeconfig returns the kubeconfig of the test cluster, or skips tb
// (fails it with SANDBOXER_REQUIRE_KUBE=1) when there is none.
func Kubeconfig(tb testing.TB) string {
	tb.Helper()
	if KubeLater() {
		tb.Skipf("a test on the cluster: %s=1 leaves it for the cluster's own pass", KubeLaterEnv)
	}
	var tried []string
	if env := os.Getenv("KUBECONFIG"); env != "" {
		if _, err := os.Stat(env); err == nil {
			return env
		}
		tried = append(tried, "KUBECONFIG="+env)
	}
	if root := repoRoot(); root != "" {
		local := filepath.Join(root, ".kube", "kubeconfig")
		if _, err := os.Stat(local); err == nil {
			return local
		}
		tried = append(tried, local)
	}
	if KubeRequired() {
		tb.Fatalf("no cluster: no kubeconfig at %v, and %s=1 requires one (start one with make kube)", tried, KubeRequireEnv)
	}
	tb.Skipf("no cluster: no kubeconfig at %v (make kube starts one; %s=1 makes this a failure)", tried, KubeRequireEnv)
	return ""
}

// KubeNamespace is the namespace the tests use.
func KubeNamespace() string {
	if ns := os.Getenv(KubeNamespaceEnv); ns != "" {
		return ns
	}
	return "default"
}

// repoRoot is the module's directory, found from this file's.
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

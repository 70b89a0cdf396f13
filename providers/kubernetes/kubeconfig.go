package kubernetes

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxer/sandboxer/config"
)

// defaultNamespace is where sandboxes go when neither the configuration
// nor the kubeconfig context names a namespace.
const defaultNamespace = "default"

// inClusterNamespaceFile is where a pod's service account namespace is
// mounted: in-cluster, sandboxes go in sandboxer's own namespace by
// default.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// loadClientConfig finds the cluster, in kubectl's order: cfg.Kubeconfig,
// else the files KUBECONFIG lists, else ~/.kube/config, else (when none
// of those exists) the in-cluster config of a pod. cfg.Context selects a
// context other than the current one. It returns the client config, a
// description of where it looked (for errors: the file, the context, the
// server URL) and the namespace: cfg.Namespace, else the context's, else
// "default".
func loadClientConfig(cfg *config.Provider) (*rest.Config, string, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	var source string
	switch {
	case cfg.Kubeconfig != "":
		if _, err := os.Stat(cfg.Kubeconfig); err != nil {
			return nil, "", "", fmt.Errorf("kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: cfg.Kubeconfig}
		source = "kubeconfig " + cfg.Kubeconfig
	default:
		files := existing(rules.Precedence)
		if len(files) == 0 {
			return inCluster(cfg, rules.Precedence)
		}
		source = "kubeconfig " + strings.Join(files, ":")
		if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "" {
			source += " (from KUBECONFIG)"
		}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("read %s: %w", source, err)
	}
	ctxName := cfg.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if ctxName == "" {
		return nil, "", "", fmt.Errorf("%s has no current context; set provider \"kubernetes\" { context = \"…\" }", source)
	}
	if _, ok := raw.Contexts[ctxName]; !ok {
		return nil, "", "", fmt.Errorf("%s has no context %q (it has: %s)", source, ctxName, strings.Join(contextNames(raw.Contexts), ", "))
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("%s, context %s: %w", source, ctxName, err)
	}
	where := fmt.Sprintf("%s (context %s, server %s)", source, ctxName, rc.Host)
	ns := cfg.Namespace
	if ns == "" {
		if n, _, err := cc.Namespace(); err == nil && n != "" {
			ns = n
		}
	}
	if ns == "" {
		ns = defaultNamespace
	}
	return rc, where, ns, nil
}

// inCluster is the last resort: sandboxer runs in a pod.
func inCluster(cfg *config.Provider, looked []string) (*rest.Config, string, string, error) {
	rc, err := rest.InClusterConfig()
	if err != nil {
		var tried []string
		if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			tried = append(tried, "KUBECONFIG="+env)
		} else {
			tried = append(tried, "KUBECONFIG (unset)")
		}
		tried = append(tried, looked...)
		return nil, "", "", fmt.Errorf("no cluster configuration: no kubeconfig file at %s, and not running in a pod (%v); "+
			"set KUBECONFIG or provider \"kubernetes\" { kubeconfig = \"…\" }", strings.Join(dedupe(tried), ", "), err)
	}
	where := "in-cluster config (server " + rc.Host + ")"
	ns := cfg.Namespace
	if ns == "" {
		if b, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if ns == "" {
		ns = defaultNamespace
	}
	return rc, where, ns, nil
}

// existing returns the files of paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			out = append(out, p) // unreadable: let the loader report why
		}
	}
	return out
}

func contextNames[V any](m map[string]V) []string {
	if len(m) == 0 {
		return []string{"none"}
	}
	return slices.Sorted(maps.Keys(m))
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		v = filepath.Clean(v)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

package cli

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/sandboxer/sandboxer/internal/kubeauth"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// kubeAuthAudience is the audience of --kube-auth given alone: what an
// agent pod's projected token is requested for.
const kubeAuthAudience = "sandboxer"

// serveKubeAuth is the ServiceAccount token verifier of --kube-auth, nil
// without it. The API server is reached through --kubeconfig, else the
// first file of KUBECONFIG, else the pod's own ServiceAccount; nothing is
// called until a token comes.
func serveKubeAuth(f *Factory, opts *ServeOptions) (*kubeauth.Authenticator, error) {
	if opts.KubeAuth == "" {
		if opts.Kubeconfig != "" {
			return nil, fmt.Errorf("--kubeconfig is for --kube-auth, which is off")
		}
		return nil, nil
	}
	if strings.TrimSpace(opts.KubeAuth) != opts.KubeAuth || strings.ContainsAny(opts.KubeAuth, ",") {
		return nil, fmt.Errorf("--kube-auth %q: one audience, without spaces or commas", opts.KubeAuth)
	}
	src := kubeauth.Source{Getenv: f.Getenv}
	switch {
	case opts.Kubeconfig != "":
		src.Kubeconfig = f.Path(opts.Kubeconfig)
	case f.Getenv("KUBECONFIG") != "":
		src.Kubeconfig = filepath.SplitList(f.Getenv("KUBECONFIG"))[0]
	}
	conn, err := kubeauth.Connect(src)
	if err != nil {
		return nil, fmt.Errorf("refusing to start: --kube-auth: %w", err)
	}
	return kubeauth.NewAuthenticator(conn, opts.KubeAuth), nil
}

// warnServiceAccounts says when the tenants file admits ServiceAccounts
// that cannot authenticate, --kube-auth being off.
func warnServiceAccounts(logger *slog.Logger, set *tenants.Set, kubeAuth bool) {
	if set.HasServiceAccounts() && !kubeAuth {
		logger.Warn("the tenants file admits ServiceAccounts, but --kube-auth is off: their tokens are refused")
	}
}

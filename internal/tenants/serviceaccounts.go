package tenants

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer"
)

// A ServiceAccount pattern of service_accounts is "NAMESPACE:NAME" (one
// ServiceAccount) or "NAMESPACE:*" (every ServiceAccount of the
// namespace: the namespace's default rule). The namespace is a DNS-1123
// label, the name a DNS-1123 subdomain, as Kubernetes has them.
var (
	namespacePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	saNamePattern    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ServiceAccount is the tenant that admits the ServiceAccount name of
// namespace: the one that names it ("ns:name") before the one that
// admits its whole namespace ("ns:*"); nil when none does.
func (s *Set) ServiceAccount(namespace, name string) *sandboxer.Tenant {
	if s == nil {
		return nil
	}
	if t := s.bySA[namespace+":"+name]; t != nil {
		return t
	}
	return s.bySA[namespace+":*"]
}

// HasServiceAccounts reports whether any tenant admits ServiceAccounts
// (they authenticate only when serve verifies their tokens, --kube-auth).
func (s *Set) HasServiceAccounts() bool { return s != nil && len(s.bySA) > 0 }

// serviceAccounts decodes a service_accounts list, each pattern with its
// range; a pattern given twice in one tenant is a duplicate too.
func serviceAccounts(a *hcl.Attribute) ([]located, hcl.Diagnostics) {
	list, diags := stringList(a)
	var out []located
	for _, p := range list {
		if !validServiceAccount(p.v) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid service account",
				Detail: fmt.Sprintf("%q: a ServiceAccount is \"NAMESPACE:NAME\", or \"NAMESPACE:*\" for every ServiceAccount of the namespace "+
					"(lowercase letters, digits and '-'; a name may have '.')", p.v),
				Subject: p.rng.Ptr()})
			continue
		}
		out = append(out, p)
	}
	return out, diags
}

func validServiceAccount(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != ':' {
			continue
		}
		ns, name := p[:i], p[i+1:]
		if !namespacePattern.MatchString(ns) {
			return false
		}
		return name == "*" || len(name) <= 253 && saNamePattern.MatchString(name)
	}
	return false
}

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sandboxer/sandboxer/apply"
)

// apiErr turns an API error into one that says what was being done and,
// for the failures a user must act on, what to do:
//   - the API server cannot be reached: where it was looked for; the
//     error wraps apply.ErrEngine, so refresh fails instead of calling
//     every instance dead;
//   - RBAC denied the request: the verb and resource sandboxer needed,
//     in which namespace, so the Role can be fixed (README has one);
//   - the credentials were refused.
//
// verb and resource are RBAC's words ("create", "pods/exec"); name is
// the object ("" for a list).
func (p *Provider) apiErr(verb, resource, name string, err error) error {
	if err == nil {
		return nil
	}
	doing := verb + " " + resource
	if name != "" {
		doing += " " + name
	}
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", doing, err)
	case isPodSecurityDenial(err):
		return fmt.Errorf("the Pod Security admission of namespace %s refuses to %s: %w", p.ns, doing, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("kubernetes provider: RBAC forbids sandboxer to %s in namespace %s (cluster at %s); "+
			"grant the verb %q on %q with a Role bound to sandboxer's user or service account: %w",
			verb+" "+resource, p.ns, p.where, verb, resource, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("kubernetes provider: the cluster at %s refused sandboxer's credentials to %s: %w", p.where, doing, err)
	case !errors.As(err, &status):
		// No answer from the API server at all (refused, unresolvable,
		// TLS failure, timeout): the engine itself cannot be asked.
		return &engineError{msg: fmt.Sprintf("kubernetes provider: cannot reach the Kubernetes API server at %s to %s "+
			"(start the cluster, or set KUBECONFIG or provider \"kubernetes\" { kubeconfig = \"…\" }): %v", p.where, doing, err), err: err}
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// engineError is an unreachable cluster: it wraps apply.ErrEngine (whose
// own text speaks of Docker) and the cause, with a message of its own.
type engineError struct {
	msg string
	err error
}

func (e *engineError) Error() string   { return e.msg }
func (e *engineError) Unwrap() []error { return []error{apply.ErrEngine, e.err} }

func isNotFound(err error) bool      { return apierrors.IsNotFound(err) }
func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
func isConflict(err error) bool      { return apierrors.IsConflict(err) }

func isForbiddenErr(err error) bool { return apierrors.IsForbidden(err) }

// isPodSecurityDenial reports a pod refused by the namespace's Pod
// Security admission (a 403 like RBAC's, with its own message).
func isPodSecurityDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity")
}

package apply

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// ErrNotFound is returned (wrapped) by Provider.Probe when the instance's
// resources are gone.
var ErrNotFound = errors.New("not found")

// ErrEngine is wrapped by provider errors that mean the engine itself could
// not be asked. Refresh then fails rather than call every instance dead,
// which would rotate credentials that are still in use.
var ErrEngine = errors.New("cannot reach the Docker engine")

// ErrTransient is wrapped by provider errors that pass: the engine was
// reached but could not finish in time or cut a stream under load (a
// readiness deadline, an exec stream cut again and again). Nothing was
// left behind, and the same request may succeed when tried again; the
// front ends answer it as unavailable with a hint to retry.
var ErrTransient = errors.New("the engine could not finish in time; try again")

// readyTimeoutKey carries a per-call readiness timeout (WithReadyTimeout).
type readyTimeoutKey struct{}

// WithReadyTimeout asks the provider to wait up to d for each service of
// a create to answer its probe, as asked, instead of its own (adaptive)
// timeout: a per-request setting that travels with the call.
func WithReadyTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, readyTimeoutKey{}, d)
}

// ReadyTimeout is the timeout WithReadyTimeout put on ctx; 0 for none.
func ReadyTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(readyTimeoutKey{}).(time.Duration)
	return d
}

// Provider creates, probes and deletes sandbox instances on some engine.
// Implementations live under providers/; this is all apply needs of them.
type Provider interface {
	// Check reports, before any change is made, whether the images the
	// plan starts are present or can be fetched, and what features each
	// can provide (see Preflight). An image with an empty Ref is the one
	// the provider would choose for the service. An image left out of the
	// capabilities is not checked.
	Check(ctx context.Context, images []plan.ImageUse) (plan.Capabilities, error)
	// Create provisions a ready instance. On error it leaves nothing behind.
	Create(ctx context.Context, req CreateRequest) (*Created, error)
	// Probe checks a recorded instance is running and answers with its
	// handed-out credentials. A nil error means alive; an error wrapping
	// ErrNotFound means its resources are gone.
	Probe(ctx context.Context, rec *state.Record) error
	// Delete removes everything the instance created. Deleting an instance
	// that is already gone succeeds.
	Delete(ctx context.Context, rec *state.Record) error
}

// CreateRequest is what to provision for one instance.
type CreateRequest struct {
	Address    string
	Lineage    string
	Generation int
	// Features holds every service to run with the features to enable.
	Features config.FeatureSet
	// Images is the image each service runs (the plan's choice, see
	// plan.ChooseImages); a service missing from it runs the image the
	// provider's configuration picks for its features.
	Images map[string]string
	// Networks are user networks the containers join besides their own;
	// Publish is where their ports are published and whether with TLS.
	Networks []string
	Publish  config.Publish
	// Database is the PostgreSQL database the handed-out role owns; ""
	// means config.DefaultDatabase.
	Database string
	// Runtime is where the instance runs ("" for docker, as
	// plan.Sandbox.Runtime): a provider that drives several runtimes
	// routes by it.
	Runtime string
}

// Created is what the provider made.
type Created struct {
	Credentials         map[string]state.Credentials
	Resources           state.Resources
	AvailableExtensions map[string][]string
	// ExtensionVersions holds, per service, the version of each available
	// extension or module ("" when the engine does not say).
	ExtensionVersions map[string]map[string]string
}

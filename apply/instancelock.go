package apply

import (
	"context"
	"time"
)

// instanceLocker is what state.Store offers beyond Store. When the
// Executor's Store has it, each change holds its instance's lock while it
// runs: the on-demand path (sandboxer request/release, the HTTP API) holds
// the same lock across a whole provision, so apply and a request never
// interleave on one address (e.g. apply deleting the record of an expired
// on-demand instance that a request is re-provisioning right then).
type instanceLocker interface {
	LockInstance(ctx context.Context, addr, operation string, timeout time.Duration) (unlock func() error, err error)
}

// instanceLockWait bounds the wait for a request that is provisioning the
// same instance (seconds, normally).
const instanceLockWait = 10 * time.Minute

// lockInstance takes addr's instance lock if the store supports it.
func (e *Executor) lockInstance(ctx context.Context, addr string) (func() error, error) {
	l, ok := e.Store.(instanceLocker)
	if !ok {
		return func() error { return nil }, nil
	}
	return l.LockInstance(ctx, addr, "apply", instanceLockWait)
}

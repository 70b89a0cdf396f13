package docker

import (
	"fmt"

	"github.com/sandboxer/sandboxer/state"
)

// serviceOf returns the container and credentials of one service.
func serviceOf(rec *state.Record, svc string) (string, state.Credentials, error) {
	id := rec.Resources.Containers[svc]
	c, ok := rec.Credentials[svc]
	if id == "" || !ok {
		return "", state.Credentials{}, fmt.Errorf("%s has no %s", rec.Address, svc)
	}
	return id, c, nil
}

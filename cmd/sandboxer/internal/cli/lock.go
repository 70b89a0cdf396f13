package cli

import (
	"errors"
	"fmt"

	"github.com/sandboxer/sandboxer/state"
)

// lockError explains lock contention and how to wait for it.
func lockError(err error) error {
	var le *state.LockedError
	if errors.As(err, &le) {
		return fmt.Errorf("%w\nAnother sandboxer command is using this state. Wait for it to finish, or retry with --lock-timeout=30s to wait", err)
	}
	return err
}

package rotate

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// DefaultTimeout bounds one service's rotation (connect, change, close).
const DefaultTimeout = 10 * time.Second

// Network rotates credentials by connecting to each service as its admin.
// The zero value is ready to use.
type Network struct {
	// Timeout bounds each service's rotation (default DefaultTimeout).
	Timeout time.Duration
}

// Rotate gives every service of rec a new app password and returns the
// record's credentials with them (rec is not changed). Services are
// rotated at once; on an error some may have been rotated, so the caller
// must treat the instance as spoiled (tear it down).
func (n Network) Rotate(ctx context.Context, rec *state.Record) (map[string]state.Credentials, error) {
	out := maps.Clone(rec.Credentials)
	svcs := slices.Sorted(maps.Keys(rec.Credentials))
	errs := make([]error, len(svcs))
	fresh := make([]state.Credentials, len(svcs))
	var wg sync.WaitGroup
	for i, svc := range svcs {
		c := rec.Credentials[svc]
		pw, err := NewPassword()
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, n.timeout())
			defer cancel()
			err := fmt.Errorf("no way to rotate credentials of service %s", svc)
			if s, ok := services.Lookup(svc); ok {
				err = s.Rotate(cctx, c, pw)
			}
			if err != nil {
				errs[i] = scrub(fmt.Errorf("rotate %s credentials of %s: %w", svc, rec.Address, err), c.Password, c.AdminPassword, pw)
				return
			}
			c.Password = pw
			fresh[i] = c
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, svc := range svcs {
		out[svc] = fresh[i]
	}
	return out, nil
}

func (n Network) timeout() time.Duration {
	if n.Timeout > 0 {
		return n.Timeout
	}
	return DefaultTimeout
}

// NewPassword returns 192 random bits, URL-safe (A-Z a-z 0-9 - _), the
// same form providers hand out, so it fits a URL, a shell line, an ACL
// rule or a SQL literal unquoted.
func NewPassword() (state.Secret, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return state.Secret(base64.RawURLEncoding.EncodeToString(b)), nil
}

// scrubbed is an error whose message had secrets removed; the original
// stays reachable for errors.Is (context errors).
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

func scrub(err error, secrets ...state.Secret) error {
	msg := err.Error()
	for _, s := range secrets {
		if v := s.Reveal(); v != "" {
			msg = strings.ReplaceAll(msg, v, "(sensitive)")
		}
	}
	return &scrubbed{msg: msg, err: err}
}

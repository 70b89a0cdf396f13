package kubeauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// CacheTTL is the longest an answer is kept: a token revoked at the API
// server (its pod or ServiceAccount deleted) is refused at most this long
// after.
const CacheTTL = 30 * time.Second

// CacheSize bounds the answers kept. When it is full the expired ones
// go, and then the oldest.
const CacheSize = 4096

// MaxInFlight bounds the reviews waiting on the API server at once: a
// flood of made-up tokens costs the cluster at most this many calls at a
// time (the others wait their turn, or their caller's end).
const MaxInFlight = 16

// Reviewer asks the API server about a token (*Conn.Review).
type Reviewer interface {
	Review(ctx context.Context, token, audience string) (Identity, error)
}

// Authenticator verifies ServiceAccount tokens for one audience, keeping
// answers briefly by the token's SHA-256. Safe for concurrent use; the
// reviews of one token that arrive together are one call.
type Authenticator struct {
	reviewer Reviewer
	audience string
	now      func() time.Time

	group    singleflight.Group
	inFlight chan struct{}
	mu       sync.Mutex
	cache    map[[32]byte]entry
}

type entry struct {
	id      Identity
	ok      bool // false: ErrUnauthenticated
	expires time.Time
	added   time.Time
}

// NewAuthenticator verifies tokens through r for audience.
func NewAuthenticator(r Reviewer, audience string) *Authenticator {
	return &Authenticator{reviewer: r, audience: audience, now: time.Now, cache: map[[32]byte]entry{},
		inFlight: make(chan struct{}, MaxInFlight)}
}

// Audience is the audience tokens must be for.
func (a *Authenticator) Audience() string { return a.audience }

// Authenticate is the ServiceAccount token belongs to, ErrUnauthenticated
// when it is not one valid for the audience, or ErrUnavailable when the
// API server cannot say (that answer is not kept).
func (a *Authenticator) Authenticate(ctx context.Context, token string) (Identity, error) {
	if !jwtShaped(token) {
		// A ServiceAccount token is a JWT. Anything else (a mistyped
		// tenant token, noise) is refused here and never sent on.
		return Identity{}, ErrUnauthenticated
	}
	sum := sha256.Sum256([]byte(token))
	now := a.now()
	if e, ok := a.lookup(sum, now); ok {
		return e.result()
	}
	exp, hasExp := expiry(token)
	if hasExp && !exp.After(now) {
		// It says it has expired; a forged exp could only make it refused.
		return Identity{}, ErrUnauthenticated
	}
	key := string(sum[:])
	v, err, _ := a.group.Do(key, func() (any, error) {
		select {
		case a.inFlight <- struct{}{}:
			defer func() { <-a.inFlight }()
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
		}
		// Not the first caller's cancellation: others wait on this call
		// (the connection's client bounds it).
		id, err := a.reviewer.Review(context.WithoutCancel(ctx), token, a.audience)
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			return nil, err // unavailable: ask again next time
		}
		added := a.now()
		until := added.Add(CacheTTL)
		if hasExp && exp.Before(until) {
			until = exp
		}
		e := entry{id: id, ok: err == nil, expires: until, added: added}
		a.store(sum, e)
		return e, nil
	})
	if err != nil {
		return Identity{}, err
	}
	return v.(entry).result()
}

func (e entry) result() (Identity, error) {
	if !e.ok {
		return Identity{}, ErrUnauthenticated
	}
	return e.id, nil
}

func (a *Authenticator) lookup(sum [32]byte, now time.Time) (entry, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.cache[sum]
	if !ok || !now.Before(e.expires) {
		return entry{}, false
	}
	return e, true
}

func (a *Authenticator) store(sum [32]byte, e entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= CacheSize {
		for k, old := range a.cache {
			if !e.added.Before(old.expires) {
				delete(a.cache, k)
			}
		}
	}
	for len(a.cache) >= CacheSize {
		var oldest [32]byte
		first := true
		var at time.Time
		for k, old := range a.cache {
			if first || old.added.Before(at) {
				oldest, at, first = k, old.added, false
			}
		}
		delete(a.cache, oldest)
	}
	a.cache[sum] = e
}

// Len is the number of answers kept (tests).
func (a *Authenticator) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cache)
}

// jwtShaped reports whether token is three non-empty base64url parts.
func jwtShaped(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(token) > 16<<10 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// expiry is the exp claim of a JWT, read without checking its signature:
// it only ever shortens how long an answer is kept.
func expiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	secs, err := claims.Exp.Int64()
	if err != nil {
		f, ferr := claims.Exp.Float64()
		if ferr != nil {
			return time.Time{}, false
		}
		secs = int64(f)
	}
	return time.Unix(secs, 0), true
}

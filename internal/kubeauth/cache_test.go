package kubeauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingReviewer answers from a table (a token missing from it is
// unauthenticated) and counts its calls; down makes it unavailable.
type countingReviewer struct {
	mu    sync.Mutex
	ids   map[string]Identity
	down  bool
	delay time.Duration
	calls atomic.Int32
}

func (c *countingReviewer) Review(_ context.Context, token, audience string) (Identity, error) {
	c.calls.Add(1)
	time.Sleep(c.delay)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return Identity{}, fmt.Errorf("%w: connection refused", ErrUnavailable)
	}
	if audience != "sandboxer" {
		return Identity{}, errors.New("wrong audience asked")
	}
	id, ok := c.ids[token]
	if !ok {
		return Identity{}, ErrUnauthenticated
	}
	return id, nil
}

func (c *countingReviewer) revoke(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ids, token)
}

// jwt is a token shaped as a JWT with the exp claim given (0: none); its
// signature is nothing: expiry reads it without trusting it.
func jwt(exp int64, salt string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims := fmt.Sprintf(`{"aud":["sandboxer"],"sub":%q}`, salt)
	if exp != 0 {
		claims = fmt.Sprintf(`{"aud":["sandboxer"],"exp":%d,"sub":%q}`, exp, salt)
	}
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

func TestAuthenticatorCache(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good, soon := jwt(0, "good"), jwt(now.Add(10*time.Second).Unix(), "soon")
	r := &countingReviewer{ids: map[string]Identity{good: {"agents", "runner"}, soon: {"agents", "runner"}}}
	a := NewAuthenticator(r, "sandboxer")
	a.now = func() time.Time { return now }
	ctx := context.Background()
	check := func(token string, want error, calls int32) {
		t.Helper()
		id, err := a.Authenticate(ctx, token)
		if !errors.Is(err, want) || (want == nil && id != Identity{"agents", "runner"}) {
			t.Errorf("%v %v, want %v", id, err, want)
		}
		if got := r.calls.Load(); got != calls {
			t.Errorf("%d reviews, want %d", got, calls)
		}
	}
	check(good, nil, 1)
	check(good, nil, 1)                       // kept
	check("not-a-jwt", ErrUnauthenticated, 1) // never sent to the API server
	unknown := jwt(0, "unknown")
	check(unknown, ErrUnauthenticated, 2)
	check(unknown, ErrUnauthenticated, 2) // refusals are kept too
	// Revoked at the API server: still accepted within CacheTTL, refused after.
	r.revoke(good)
	now = now.Add(CacheTTL - time.Second)
	check(good, nil, 2)
	now = now.Add(time.Second)
	check(good, ErrUnauthenticated, 3)

	// A token whose exp comes before CacheTTL is kept only until then,
	// and one past its exp is refused without a review.
	now = time.Unix(1_800_000_000, 0)
	check(soon, nil, 4)
	now = now.Add(9 * time.Second)
	check(soon, nil, 4)
	now = now.Add(time.Second)
	check(soon, ErrUnauthenticated, 4)

	// An API server that cannot answer: unavailable, and not kept.
	fresh := jwt(0, "fresh")
	r.mu.Lock()
	r.ids[fresh] = Identity{"agents", "runner"}
	r.down = true
	r.mu.Unlock()
	check(fresh, ErrUnavailable, 5)
	r.mu.Lock()
	r.down = false
	r.mu.Unlock()
	check(fresh, nil, 6)
}

// The cache holds at most CacheSize answers: expired ones go first, then
// the oldest.
func TestAuthenticatorCacheBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := &countingReviewer{ids: map[string]Identity{}}
	a := NewAuthenticator(r, "sandboxer")
	a.now = func() time.Time { return now }
	for i := range CacheSize + 10 {
		now = now.Add(time.Millisecond)
		_, _ = a.Authenticate(context.Background(), jwt(0, fmt.Sprint(i)))
	}
	if a.Len() != CacheSize {
		t.Errorf("%d answers kept, want %d", a.Len(), CacheSize)
	}
	calls := r.calls.Load()
	_, _ = a.Authenticate(context.Background(), jwt(0, fmt.Sprint(CacheSize+9))) // the newest is kept
	_, _ = a.Authenticate(context.Background(), jwt(0, "0"))                     // the oldest is gone
	if got := r.calls.Load() - calls; got != 1 {
		t.Errorf("%d reviews, want 1 (t0 only)", got)
	}
	now = now.Add(CacheTTL)
	_, _ = a.Authenticate(context.Background(), jwt(0, "new"))
	if a.Len() != 1 {
		t.Errorf("%d answers kept after all expired, want 1", a.Len())
	}
}

// Calls with one token that arrive together make one review.
func TestAuthenticatorOneReviewAtATime(t *testing.T) {
	tok := jwt(0, "x")
	r := &countingReviewer{ids: map[string]Identity{tok: {"agents", "runner"}}, delay: 100 * time.Millisecond}
	a := NewAuthenticator(r, "sandboxer")
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Authenticate(context.Background(), tok); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := r.calls.Load(); n != 1 {
		t.Errorf("%d reviews for 20 concurrent calls, want 1", n)
	}
}

func TestJWTShaped(t *testing.T) {
	for tok, want := range map[string]bool{jwt(0, "a"): true, "a.b.c": true, "a.b": false, "a..c": false, "a.b.c.d": false,
		"a.b+.c": false, "acme-token-1": false, "": false} {
		if jwtShaped(tok) != want {
			t.Errorf("jwtShaped(%q) = %v", tok, !want)
		}
	}
}

func TestExpiry(t *testing.T) {
	if exp, ok := expiry(jwt(1_800_000_000, "a")); !ok || exp.Unix() != 1_800_000_000 {
		t.Errorf("exp %v %v", exp, ok)
	}
	for _, tok := range []string{"", "a.b", "a.!!!.c", jwt(0, "a"), "a." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":"x"}`)) + ".c"} {
		if _, ok := expiry(tok); ok {
			t.Errorf("%q has an exp", tok)
		}
	}
}

// blockingReviewer holds every review until released, counting those
// waiting at once.
type blockingReviewer struct {
	release chan struct{}
	now     atomic.Int32
	most    atomic.Int32
}

func (b *blockingReviewer) Review(ctx context.Context, token, audience string) (Identity, error) {
	n := b.now.Add(1)
	defer b.now.Add(-1)
	for {
		m := b.most.Load()
		if n <= m || b.most.CompareAndSwap(m, n) {
			break
		}
	}
	<-b.release
	return Identity{}, ErrUnauthenticated
}

// Made-up tokens, each new, cost the API server at most MaxInFlight
// reviews at a time; a caller that gives up while waiting gets
// ErrUnavailable.
func TestAuthenticatorInFlightBound(t *testing.T) {
	b := &blockingReviewer{release: make(chan struct{})}
	a := NewAuthenticator(b, "sandboxer")
	var wg sync.WaitGroup
	for i := range 3 * MaxInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = a.Authenticate(context.Background(), jwt(0, fmt.Sprint(i)))
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.now.Load() < MaxInFlight && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.Authenticate(ctx, jwt(0, "late")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a caller that gave up waiting: %v, want unavailable", err)
	}
	close(b.release)
	wg.Wait()
	if m := b.most.Load(); m != MaxInFlight {
		t.Errorf("%d reviews at once, want %d", m, MaxInFlight)
	}
}

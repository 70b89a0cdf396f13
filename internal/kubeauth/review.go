package kubeauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// The two ways a token is not accepted. Neither error ever holds the
// token.
var (
	// ErrUnauthenticated: the API server does not vouch for the token for
	// our audience, or it is not a ServiceAccount's (401).
	ErrUnauthenticated = errors.New("not a valid ServiceAccount token for this audience")
	// ErrUnavailable: the API server could not be asked, or refused to be
	// (serve's ServiceAccount lacks create on tokenreviews) (503).
	ErrUnavailable = errors.New("cannot verify ServiceAccount tokens: the Kubernetes API server did not answer")
)

// Identity is the ServiceAccount a token belongs to.
type Identity struct {
	Namespace, Name string
}

func (i Identity) String() string { return i.Namespace + "/" + i.Name }

// The TokenReview fields this package sends and reads
// (authentication.k8s.io/v1), written out here so that the binary links
// nothing of k8s.io.
type tokenReview struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Spec       tokenReviewSpec   `json:"spec"`
	Status     tokenReviewStatus `json:"status"`
}

type tokenReviewSpec struct {
	Token     string   `json:"token"`
	Audiences []string `json:"audiences,omitempty"`
}

type tokenReviewStatus struct {
	Authenticated bool     `json:"authenticated"`
	Audiences     []string `json:"audiences"`
	User          struct {
		Username string `json:"username"`
	} `json:"user"`
	// Error is the API server's reason for a refusal; it names no token.
	Error string `json:"error"`
}

const (
	reviewPath = "/apis/authentication.k8s.io/v1/tokenreviews"
	saPrefix   = "system:serviceaccount:"
	maxAnswer  = 1 << 20
)

// Review asks the API server whether token is a ServiceAccount's, valid
// for audience. It does no caching (Authenticator does).
func (c *Conn) Review(ctx context.Context, token, audience string) (Identity, error) {
	body, err := json.Marshal(tokenReview{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview",
		Spec: tokenReviewSpec{Token: token, Audiences: []string{audience}}})
	if err != nil {
		return Identity{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Server+reviewPath, bytes.NewReader(body))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != nil {
		own, err := c.token()
		if err != nil {
			return Identity{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if own != "" {
			req.Header.Set("Authorization", "Bearer "+own)
		}
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		// A url.Error names the URL (no token is in it) and the cause.
		return Identity{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: read the review: %v", ErrUnavailable, err)
	}
	switch {
	case resp.StatusCode == http.StatusForbidden:
		return Identity{}, fmt.Errorf("%w: %s: serve's own identity may not create tokenreviews "+
			"(bind its ServiceAccount to the ClusterRole system:auth-delegator)", ErrUnavailable, resp.Status)
	case resp.StatusCode == http.StatusUnauthorized:
		return Identity{}, fmt.Errorf("%w: %s: the API server does not accept serve's own credentials", ErrUnavailable, resp.Status)
	case resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK:
		return Identity{}, fmt.Errorf("%w: %s", ErrUnavailable, resp.Status)
	}
	var tr tokenReview
	if err := json.Unmarshal(data, &tr); err != nil {
		return Identity{}, fmt.Errorf("%w: the review is not JSON: %v", ErrUnavailable, err)
	}
	return identity(tr.Status, audience)
}

// identity applies the rules to a review's status.
func identity(st tokenReviewStatus, audience string) (Identity, error) {
	if !st.Authenticated {
		return Identity{}, ErrUnauthenticated
	}
	// An API server that ignores spec.audiences answers with none: then
	// the token is not known to be ours.
	if !slices.Contains(st.Audiences, audience) {
		return Identity{}, fmt.Errorf("%w: the review does not name audience %q", ErrUnauthenticated, audience)
	}
	rest, ok := strings.CutPrefix(st.User.Username, saPrefix)
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" || strings.Contains(name, ":") {
		return Identity{}, fmt.Errorf("%w: not a ServiceAccount", ErrUnauthenticated)
	}
	return Identity{Namespace: ns, Name: name}, nil
}

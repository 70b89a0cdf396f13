// Package apiclient is the Go client of sandboxer's HTTP API (`sandboxer
// serve`): request, release, extend and list on-demand sandboxes from
// another process or machine. Bodies and answers are the types of package
// api, the same ones the server encodes; refusals are *api.Error values
// that match api.ErrNotFound, api.ErrNotAllowed, api.ErrBusy, … with
// errors.Is, exactly like the library's (package sandboxer).
//
// What this package must never do: put the bearer token or a password
// into an error or log line, or depend on anything but the standard
// library and package api (a client does not pull in the engine).
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/api"
)

// maxResponse bounds an answer read from the server.
const maxResponse = 16 << 20

// Client talks to one sandboxer API. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	// tokenFile, when set, is read at each call instead of token.
	tokenFile string
	hc        *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient uses hc instead of a client with a 10-minute timeout
// (a cold provision, with an image pull, can take minutes).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTokenFile reads the bearer token from path at every call instead
// of taking one token at New: a pod's projected ServiceAccount token
// (serve --kube-auth) is rotated by the kubelet while the agent runs.
func WithTokenFile(path string) Option { return func(c *Client) { c.tokenFile = path } }

// New returns a client for the API at baseURL (e.g.
// "http://127.0.0.1:8080") with a bearer token (or WithTokenFile and an
// empty token).
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(baseURL), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sandboxer API URL %q: want http://HOST:PORT or https://HOST:PORT", baseURL)
	}
	c := &Client{base: u, token: strings.TrimSpace(token), hc: &http.Client{Timeout: 10 * time.Minute}}
	for _, o := range opts {
		o(c)
	}
	if c.token == "" && c.tokenFile == "" {
		return nil, errors.New("sandboxer API: no token (set SANDBOXER_API_TOKEN or SANDBOXER_API_TOKEN_FILE)")
	}
	return c, nil
}

// FromEnv returns a client for SANDBOXER_API_URL with the token in
// SANDBOXER_API_TOKEN, else read at each call from the file
// SANDBOXER_API_TOKEN_FILE names, and ok=false when SANDBOXER_API_URL is
// unset.
func FromEnv(opts ...Option) (c *Client, ok bool, err error) {
	u := os.Getenv("SANDBOXER_API_URL")
	if u == "" {
		return nil, false, nil
	}
	tok := os.Getenv("SANDBOXER_API_TOKEN")
	if f := os.Getenv("SANDBOXER_API_TOKEN_FILE"); strings.TrimSpace(tok) == "" && f != "" {
		opts = append([]Option{WithTokenFile(f)}, opts...)
	}
	c, err = New(u, tok, opts...)
	return c, true, err
}

// bearer is the token of this call: the file's current content with
// WithTokenFile. Errors name the file, never its content.
func (c *Client) bearer() (string, error) {
	if c.tokenFile == "" {
		return c.token, nil
	}
	b, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return "", fmt.Errorf("sandboxer API: read the token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("sandboxer API: the token file %s is empty", c.tokenFile)
	}
	return tok, nil
}

// Request ensures an on-demand instance exists and covers body (POST
// /v1/request). The answer holds credentials.
func (c *Client) Request(ctx context.Context, body api.RequestBody) (*api.Sandbox, error) {
	var out api.Sandbox
	if err := c.do(ctx, http.MethodPost, api.PathRequest, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Release gives an instance back; released is false when there was
// nothing to release.
func (c *Client) Release(ctx context.Context, address, key string) (released bool, err error) {
	var out api.ReleaseResult
	if err := c.do(ctx, http.MethodPost, api.PathRelease, api.ReleaseBody{Address: address, Key: key}, &out); err != nil {
		return false, err
	}
	return out.Released, nil
}

// Database hands out a fresh database per test (POST /v1/databases).
func (c *Client) Database(ctx context.Context, body api.DatabaseBody) (*api.Sandbox, error) {
	var out api.Sandbox
	if err := c.do(ctx, http.MethodPost, api.PathDatabases, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DropDatabase drops a database Database handed out.
func (c *Client) DropDatabase(ctx context.Context, address, name string) error {
	var out api.DropDatabaseResult
	return c.do(ctx, http.MethodPost, api.PathDropDatabase, api.DropDatabaseBody{Address: address, Name: name}, &out)
}

// Extend sets an instance's expiry to now + ttl.
func (c *Client) Extend(ctx context.Context, address, key, ttl string) (*api.Instance, error) {
	var out api.Instance
	if err := c.do(ctx, http.MethodPost, api.PathExtend, api.ExtendBody{Address: address, Key: key, TTL: ttl}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Fork makes body.Count copies of a running instance, data and all
// (POST /v1/fork).
func (c *Client) Fork(ctx context.Context, body api.ForkBody) (*api.ForkResult, error) {
	var out api.ForkResult
	if err := c.do(ctx, http.MethodPost, api.PathFork, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List returns the on-demand instances, without credentials.
func (c *Client) List(ctx context.Context) ([]api.Instance, error) {
	var out api.SandboxList
	if err := c.do(ctx, http.MethodGet, api.PathSandboxes, nil, &out); err != nil {
		return nil, err
	}
	return out.Sandboxes, nil
}

// Health checks the server answers (GET /healthz, no token needed).
func (c *Client) Health(ctx context.Context) error {
	var out api.Health
	return c.do(ctx, http.MethodGet, api.PathHealth, nil, &out)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("sandboxer API %s: encode body: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.JoinPath(path).String(), body)
	if err != nil {
		return fmt.Errorf("sandboxer API %s: %w", path, err)
	}
	tok, err := c.bearer()
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("sandboxer API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("sandboxer API %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("sandboxer API %s %s: answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

// decodeError turns a non-2xx answer into *api.Error; a server that sends
// no code (or not JSON: a proxy's error page) is classified by status.
func decodeError(status int, data []byte) error {
	var eb api.ErrorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
		eb = api.ErrorBody{Error: strings.TrimSpace(http.StatusText(status))}
	}
	code := eb.Code
	if code == "" {
		code = codeOfStatus(status)
	}
	return &api.Error{Code: code, Message: eb.Error, Allowed: eb.Allowed, Status: status}
}

func codeOfStatus(status int) api.Code {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return api.CodeInvalid
	case http.StatusUnauthorized, http.StatusForbidden:
		return api.CodeUnauthorized
	case http.StatusNotFound:
		return api.CodeNotFound
	case http.StatusUnprocessableEntity:
		return api.CodeNotAllowed
	case http.StatusConflict:
		return api.CodeBusy
	case http.StatusRequestEntityTooLarge:
		return api.CodeTooLarge
	case http.StatusServiceUnavailable:
		return api.CodeEngineUnreachable
	}
	return api.CodeInternal
}

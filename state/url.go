package state

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/config"
)

// URL is the connection URL for a service's handed-out credentials. It
// contains the password: only env and output may print it.
func (c Credentials) URL(service string) string {
	return c.endpointURL(service, c.Host, c.Port)
}

// NetworkURL is URL for the endpoint on the instance's user networks, ""
// when it joined none.
func (c Credentials) NetworkURL(service string) string {
	if c.NetworkHost == "" {
		return ""
	}
	return c.endpointURL(service, c.NetworkHost, c.NetworkPort)
}

// endpointURL builds the URL for one endpoint in the service's shape
// (config.ServiceURLShape): with TLS, PostgreSQL URLs ask libpq and pgx
// to verify the server against the instance's CA file
// (sslmode=verify-full) and Redis URLs use the rediss scheme; Redis
// clients take the CA from SANDBOXER_REDIS_CA (redis-cli --cacert).
func (c Credentials) endpointURL(service, host string, port int) string {
	u := url.URL{
		User:   url.UserPassword(c.User, c.Password.Reveal()),
		Host:   net.JoinHostPort(host, strconv.Itoa(port)),
		Scheme: service,
	}
	shape, ok := config.ServiceURLShape(service)
	if !ok {
		return u.String()
	}
	u.Scheme, u.Path, u.RawQuery = shape.Scheme, shape.Path, shape.Query
	if shape.DatabasePath {
		u.Path = "/" + c.Database
	}
	if c.CA != "" {
		if shape.TLSScheme != "" {
			u.Scheme = shape.TLSScheme
		}
		if shape.TLSQuery != "" {
			u.RawQuery = shape.TLSQuery
		}
		if c.CAFile != "" && shape.CAFileParam != "" {
			u.RawQuery += "&" + shape.CAFileParam + "=" + queryPath(c.CAFile)
		}
	}
	return u.String()
}

// queryPath escapes a file path for a query value, keeping its slashes
// readable.
func queryPath(p string) string {
	escaped := (&url.URL{Path: p}).EscapedPath()
	return strings.NewReplacer("&", "%26", "=", "%3D", "+", "%2B").Replace(escaped)
}

// String hides the password when credentials are printed by mistake.
func (c Credentials) String() string {
	return fmt.Sprintf("%s@%s:%d (password hidden)", c.User, c.Host, c.Port)
}

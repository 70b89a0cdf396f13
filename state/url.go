package state

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// URL is the connection URL for a service's handed-out credentials. It
// contains the password: only env and output may print it.
func (c Credentials) URL(service string) string {
	u := url.URL{
		User: url.UserPassword(c.User, c.Password.Reveal()),
		Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)),
	}
	switch service {
	case "postgres":
		u.Scheme = "postgres"
		u.Path = "/" + c.Database
		u.RawQuery = "sslmode=disable"
	case "redis":
		u.Scheme = "redis"
		u.Path = "/0"
	default:
		u.Scheme = service
	}
	return u.String()
}

// String hides the password when credentials are printed by mistake.
func (c Credentials) String() string {
	return fmt.Sprintf("%s@%s:%d (password hidden)", c.User, c.Host, c.Port)
}

package valkey

import (
	"net"
	"net/url"
	"strconv"

	"github.com/sandboxer/sandboxer/state"
)

// URL is the handed-out connection URL for the endpoint host:port, in
// the Redis scheme every Valkey client reads (valkey-cli -u, go-redis,
// redis-py, ioredis): redis://user:password@host:port/0, rediss:// with
// TLS (clients take the CA from a file of their own, as for Redis). It
// holds the password: only env and output may print it.
func URL(c state.Credentials, host string, port int) string {
	u := url.URL{
		Scheme: "redis",
		User:   url.UserPassword(c.User, c.Password.Reveal()),
		Host:   net.JoinHostPort(host, strconv.Itoa(port)),
		Path:   "/0",
	}
	if c.CA != "" {
		u.Scheme = "rediss"
	}
	return u.String()
}

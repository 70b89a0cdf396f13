package mysql

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// URL is the handed-out connection URL for the endpoint host:port:
// mysql://user:password@host:port/database, the form Prisma, Node's
// mysql2, MySQL Shell and most URL-taking clients read (Rails and
// SQLAlchemy name the adapter in the scheme, mysql2:// and
// mysql+driver://, and take the rest as is). With TLS it asks for the
// server's name to be verified against the instance's CA file, in MySQL
// Shell's URI parameters (ssl-mode=VERIFY_IDENTITY, ssl-ca). It holds the
// password: only env and output may print it.
func URL(c state.Credentials, host string, port int) string {
	u := url.URL{
		Scheme: "mysql",
		User:   url.UserPassword(c.User, c.Password.Reveal()),
		Host:   net.JoinHostPort(host, strconv.Itoa(port)),
		Path:   "/" + c.Database,
	}
	if c.CA != "" {
		u.RawQuery = "ssl-mode=VERIFY_IDENTITY"
		if c.CAFile != "" {
			u.RawQuery += "&ssl-ca=" + queryPath(c.CAFile)
		}
	}
	return u.String()
}

// queryPath escapes a file path for a query value, keeping its slashes
// readable (as state's URLs do).
func queryPath(p string) string {
	escaped := (&url.URL{Path: p}).EscapedPath()
	return strings.NewReplacer("&", "%26", "=", "%3D", "+", "%2B").Replace(escaped)
}

package config

// The names of a service's credential attributes. This table is their one
// home: outputs call them sandbox.NAME.SERVICE.<Name>, env and request
// JSON call them <PREFIX><SERVICE>_<EnvSuffix>.
const (
	AttrURL      = "url"
	AttrHost     = "host"
	AttrPort     = "port"
	AttrUser     = "user"
	AttrPassword = "password"
	AttrDatabase = "database"
	// The in-network endpoint, when the instance joined user networks, and
	// the CA file, when it speaks TLS (README: Reach).
	AttrNetworkURL  = "network_url"
	AttrNetworkHost = "network_host"
	AttrNetworkPort = "network_port"
	AttrCA          = "ca"
)

// DefaultEnvPrefix starts every exported variable unless a prefix is chosen.
const DefaultEnvPrefix = "SANDBOXER_"

// Attribute describes one credential attribute.
type Attribute struct {
	// Name is the attribute in outputs (sandbox.ci.postgres.url).
	Name string
	// EnvSuffix ends the variable name in env (SANDBOXER_POSTGRES_URL).
	EnvSuffix string
	// Secret values are masked in CI logs and must be sensitive outputs.
	Secret bool
	// Number values are numbers in outputs (ports), strings in env.
	Number bool
}

// CredentialAttributes lists every attribute, sorted by Name. A service
// may lack some of them (redis has no database).
func CredentialAttributes() []Attribute {
	return []Attribute{
		{Name: AttrCA, EnvSuffix: "CA"},
		{Name: AttrDatabase, EnvSuffix: "DB"},
		{Name: AttrHost, EnvSuffix: "HOST"},
		{Name: AttrNetworkHost, EnvSuffix: "NETWORK_HOST"},
		{Name: AttrNetworkPort, EnvSuffix: "NETWORK_PORT", Number: true},
		{Name: AttrNetworkURL, EnvSuffix: "NETWORK_URL", Secret: true},
		{Name: AttrPassword, EnvSuffix: "PASSWORD", Secret: true},
		{Name: AttrPort, EnvSuffix: "PORT", Number: true},
		{Name: AttrURL, EnvSuffix: "URL", Secret: true},
		{Name: AttrUser, EnvSuffix: "USER"},
	}
}

package kubeauth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// kubeconfig holds the fields of a kubeconfig file this package reads:
// the current context's cluster (server, CA, TLS settings) and user
// (client certificate, or a token). Exec and auth-provider plugins are
// refused: serve runs them nowhere.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server     string `yaml:"server"`
			CA         string `yaml:"certificate-authority"`
			CAData     string `yaml:"certificate-authority-data"`
			Insecure   bool   `yaml:"insecure-skip-tls-verify"`
			ServerName string `yaml:"tls-server-name"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Cert         string    `yaml:"client-certificate"`
			CertData     string    `yaml:"client-certificate-data"`
			Key          string    `yaml:"client-key"`
			KeyData      string    `yaml:"client-key-data"`
			Token        string    `yaml:"token"`
			TokenFile    string    `yaml:"tokenFile"`
			Exec         yaml.Node `yaml:"exec"`
			AuthProvider yaml.Node `yaml:"auth-provider"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// fromKubeconfig is the connection of path's current context.
func fromKubeconfig(path string) (*Conn, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(src, &kc); err != nil {
		// yaml's errors quote no values, only lines.
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("kubeconfig %s: %s", path, fmt.Sprintf(format, a...))
	}
	if kc.CurrentContext == "" {
		return nil, fail("no current-context")
	}
	var clusterName, userName string
	found := false
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName, found = c.Context.Cluster, c.Context.User, true
		}
	}
	if !found {
		return nil, fail("no context %q", kc.CurrentContext)
	}
	dir := filepath.Dir(path)
	var conn Conn
	var ca []byte
	var insecure bool
	var serverName string
	found = false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		conn.Server = strings.TrimSuffix(c.Cluster.Server, "/")
		insecure, serverName = c.Cluster.Insecure, c.Cluster.ServerName
		if ca, err = dataOrFile(c.Cluster.CAData, c.Cluster.CA, dir); err != nil {
			return nil, fail("cluster %q certificate-authority: %v", clusterName, err)
		}
	}
	if !found || conn.Server == "" {
		return nil, fail("no cluster %q with a server", clusterName)
	}
	var cert, key []byte
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		if !u.User.Exec.IsZero() || !u.User.AuthProvider.IsZero() {
			return nil, fail("user %q uses an exec or auth-provider plugin; give serve a kubeconfig with a client certificate or a token", userName)
		}
		if cert, err = dataOrFile(u.User.CertData, u.User.Cert, dir); err != nil {
			return nil, fail("user %q client-certificate: %v", userName, err)
		}
		if key, err = dataOrFile(u.User.KeyData, u.User.Key, dir); err != nil {
			return nil, fail("user %q client-key: %v", userName, err)
		}
		switch {
		case u.User.Token != "":
			tok := u.User.Token
			conn.token = func() (string, error) { return tok, nil }
		case u.User.TokenFile != "":
			conn.token = fileToken(abs(u.User.TokenFile, dir))
		}
	}
	tc, err := tlsConfig(ca, cert, key, insecure, serverName)
	if err != nil {
		return nil, fail("%v", err)
	}
	conn.Client = httpClient(tc)
	return &conn, nil
}

// dataOrFile is base64 data when given, else the file's content (a path
// relative to the kubeconfig's directory), else nil.
func dataOrFile(data, file, dir string) ([]byte, error) {
	if data != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(data))
		if err != nil {
			return nil, errors.New("not base64")
		}
		return b, nil
	}
	if file == "" {
		return nil, nil
	}
	return os.ReadFile(abs(file, dir))
}

func abs(p, dir string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

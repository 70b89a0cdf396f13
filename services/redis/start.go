package redis

import (
	"path"

	"github.com/sandboxer/sandboxer/services/contract"
)

// Start is redis-server with the ACL file (SHA-256 hashes only), no
// persistence, MODULE and DEBUG disabled, and the requested modules the
// image does not load by itself; with TLS, the TLS port in place of the
// plain one.
func (Service) Start(in contract.StartInput, at contract.Placement) (contract.Start, error) {
	args := []string{"redis-server",
		"--aclfile", path.Join(at.SecretDir, ACLFileName),
		"--save", "",
		"--appendonly", "no",
		"--enable-module-command", "no",
		"--enable-debug-command", "no",
	}
	args = append(args, LoadModuleArgs(in.Features, in.Modules, in.SelfLoaded)...)
	if at.TLSCert != "" {
		args = append(args, TLSArgs(at.TLSCert, at.TLSKey, at.TLSCA)...)
	}
	return contract.Start{Files: map[string][]byte{ACLFileName: ACLFile(in.Creds)}, Args: args}, nil
}

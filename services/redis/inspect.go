package redis

import (
	"fmt"
	"path"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// InspectStart is the throwaway server a runtime starts to see which
// modules an image loads and can load: c's ACL file (its admin the only
// user that logs in), MODULE LOAD on, nothing persisted.
func (Service) InspectStart(c state.Credentials, secretDir string) contract.Start {
	return InspectStart("redis-server", ACLFileName, c, secretDir)
}

// InspectStart is the inspection server's start for a server binary of
// the Redis family (redis-server, valkey-server) with its ACL file named
// aclName.
func InspectStart(server, aclName string, c state.Credentials, secretDir string) contract.Start {
	return contract.Start{
		Files: map[string][]byte{aclName: ACLFile(c)},
		Args: []string{server,
			"--aclfile", path.Join(secretDir, aclName),
			"--save", "", "--appendonly", "no",
			"--enable-module-command", "yes",
			"--enable-debug-command", "no",
		},
	}
}

// FeatureVersion is ModuleVersion.
func (Service) FeatureVersion(loaded map[string]string, feature string) (string, bool) {
	return ModuleVersion(loaded, feature)
}

// ModulesHint says how to give a redis image a module.
func (Service) ModulesHint(runtime string) string {
	return ModulesHint(runtime, Name, "redis:8")
}

// ModulesHint is the hint of a missing module of service in runtime's
// provider block, naming bundle, an image that bundles the modules.
func ModulesHint(runtime, service, bundle string) string {
	return fmt.Sprintf(`set provider %q { image %q { modules = { FEATURE = "/path/to/module.so" } } } to a module the image has, or use an image that bundles it (%s)`,
		runtime, service, bundle)
}

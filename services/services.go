// Package services is the runtime-neutral contract of the services
// sandboxer runs. Each service is a package of its own (services/postgres,
// services/redis, services/mysql, services/valkey) holding what any runtime needs of it: the files and
// settings an instance starts with (init script, ACL file, server
// arguments), the protocol probe with the handed-out credentials, and the
// checks of its features once it answers, how its credentials rotate,
// how its data moves and what a snapshot of it holds. A runtime
// (providers/docker, providers/kubernetes) places the processes, copies
// the files, publishes the ports; it asks this package what a service is
// (Service, found by name with Lookup in the catalogue All) instead of
// branching on its name (servicenames_test.go counts what is left).
//
// What the packages here must never do: call a container engine or
// cluster API, print, or put a password into an error (they take
// credentials and return errors that quote none).
package services

import (
	"context"
	"crypto/tls"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/services/mysql"
	"github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/services/valkey"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Service is what every runtime asks of one kind of service.
type Service interface {
	// Name is the service's name in configurations and state.
	Name() string
	// Port is the port it listens on inside its container or pod.
	Port() int
	// Account is the account the official image runs it as, whose
	// uid/gid copied files get when the image names no USER.
	Account() string
	// StartRank orders the starts of one instance: lower first (the
	// service on the longest path to ready goes first).
	StartRank() int
	// Ping is the liveness probe: a login with c and a round trip.
	Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error
	// Start is what the service's container starts with, its files
	// placed as at says.
	Start(in StartInput, at Placement) (Start, error)
	// Ready waits (through poll) until c logs in on a started instance
	// and answers, then checks its features against check. It returns the
	// allowed features the instance can offer, name → version.
	Ready(ctx context.Context, c state.Credentials, tlsConf *tls.Config, poll Poll, check Check) (map[string]string, error)
	// Prober is a new prober that may keep a logged-in connection per
	// instance between probes (a runtime that probes often keeps one).
	Prober() Prober
	// NamesDatabase reports whether the service's credentials name a
	// database: the request's, which the app user owns.
	NamesDatabase() bool
	// Rotate gives c's app user the password pw, connected as c's admin
	// user, and ends the sessions opened with the old one (package
	// rotate, for warm-pool claims). Errors quote no password.
	Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error
	// Data is the data mover of one instance of the service (snapshot,
	// restore, reset, carried data), working through in.Run where it
	// needs the server's own tools.
	Data(in Instance) DataMover
	// SnapshotFormat is what a snapshot file of the service holds.
	SnapshotFormat() snapshot.FileFormat
}

// The shapes a service's package and the runtimes share (services/contract).
type (
	Runner     = contract.Runner
	Instance   = contract.Instance
	DataMover  = contract.DataMover
	Prober     = contract.Prober
	Poll       = contract.Poll
	Check      = contract.Check
	Placement  = contract.Placement
	StartInput = contract.StartInput
	Start      = contract.Start
	// ModuleLoader is what a service whose features are Redis-style
	// modules adds (Redis, Valkey): a runtime inspects its images with it.
	ModuleLoader = contract.ModuleLoader
	// FileInspector is what a service whose features an unstarted
	// image's files tell adds (PostgreSQL, MySQL): a runtime inspects its
	// images with it.
	FileInspector = contract.FileInspector
	ImageFiles    = contract.ImageFiles
	// GenerationDetector is what a service whose features come in API
	// generations adds (Redis, Valkey: search).
	GenerationDetector = contract.GenerationDetector
)

// Generations maps each of versions' features (feature → version, as an
// image's inspection or a started instance reports them) that has an API
// generation to it, by asking the service (GenerationDetector); nil when
// none has one.
func Generations(service string, versions map[string]string) map[string]string {
	s, ok := Lookup(service)
	if !ok {
		return nil
	}
	gd, ok := s.(GenerationDetector)
	if !ok {
		return nil
	}
	var out map[string]string
	for f, v := range versions {
		if g := gd.FeatureGeneration(f, v); g != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[f] = g
		}
	}
	return out
}

// SnapshotFormats answers snapshot.Store's question of every service in
// the catalogue.
func SnapshotFormats(service string) (snapshot.FileFormat, bool) {
	s, ok := Lookup(service)
	if !ok {
		return snapshot.FileFormat{}, false
	}
	return s.SnapshotFormat(), true
}

// All is the catalogue: every service sandboxer runs, in no particular
// order. A new service is one more entry here.
func All() []Service {
	return []Service{postgres.Service{}, redis.Service{}, mysql.Service{}, valkey.Service{}}
}

// Lookup returns the service named name.
func Lookup(name string) (Service, bool) {
	for _, s := range All() {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// StartRank is the start rank of the service named name (Service's);
// a service the catalogue does not know goes last.
func StartRank(name string) int {
	if s, ok := Lookup(name); ok {
		return s.StartRank()
	}
	return 1 << 10
}

// Port is the port the service named name listens on in its container;
// 0 for a service the catalogue does not know.
func Port(name string) int {
	if s, ok := Lookup(name); ok {
		return s.Port()
	}
	return 0
}

// Forker is what a service whose running data can be forked adds
// (PostgreSQL, Redis, Valkey: services/contract).
type Forker = contract.Forker

// ForkConnector is a Forker that connects ahead of its capture
// (contract.ForkConnector).
type ForkConnector = contract.ForkConnector

// ForkCopy is one service's captured data (contract.ForkCopy).
type ForkCopy = contract.ForkCopy

package redis

import (
	"context"
	"crypto/tls"

	"github.com/sandboxer/sandboxer/state"
)

// Name is the service's name.
const Name = "redis"

// Port is the port the server listens on.
const Port = 6379

// Service is Redis for the services.Service contract.
type Service struct{}

func (Service) Name() string    { return Name }
func (Service) Port() int       { return Port }
func (Service) Account() string { return "redis" }
func (Service) StartRank() int  { return 1 }

// Rotate gives the app user the secret pw (see the function Rotate).
func (Service) Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	return Rotate(ctx, c, pw)
}

// Ping is AUTH as c's user, then PING.
func (Service) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
}

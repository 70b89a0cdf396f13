package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/sandboxer/sandboxer/state"
)

// Client is a single-connection client that fails fast: no retries,
// no client-identity or maintenance-notification handshakes (they would
// only add round trips and log noise to a probe). DialerRetries 1: by
// default a refused dial is retried 5 times, 100 ms apart, inside one
// command, so a probe just after start (or of a dead container) would take
// 400 ms to fail instead of a millisecond.
//
// tlsConf nil means plain TCP; otherwise TLS, verified as tlsConf says.
func Client(host string, port int, user string, password state.Secret, tlsConf *tls.Config) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     fmt.Sprintf("%s:%d", host, port),
		Username:                 user,
		Password:                 password.Reveal(),
		Protocol:                 2, // plain AUTH, then commands
		DisableIdentity:          true,
		MaxRetries:               -1,
		PoolSize:                 1,
		DialTimeout:              2 * time.Second,
		DialerRetries:            1,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		TLSConfig:                tlsConf,
	})
}

// Ping is the readiness and liveness probe: AUTH as user, then PING.
func Ping(ctx context.Context, host string, port int, user string, password state.Secret, tlsConf *tls.Config) error {
	rdb := Client(host, port, user, password, tlsConf)
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("AUTH %s + PING: %w", user, err)
	}
	return nil
}

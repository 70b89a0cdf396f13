package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/sandboxer/sandboxer/state"
)

// Rotate replaces the app user's passwords with pw (sent as its SHA-256,
// so the clear text never reaches the server) and closes the user's open
// connections. The change lives in the server's memory only: sandboxes
// keep their ACL file read-only (ACL SAVE fails), so a restarted
// redis-server would take back the member's first secret, which was never
// handed out, and refuse the claimant's: its probe fails and the next
// request re-provisions it, as for any dead instance.
func Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	if c.AdminUser == "" {
		return fmt.Errorf("the record has no admin user to rotate with")
	}
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                     fmt.Sprintf("%s:%d", c.Host, c.Port),
		Username:                 c.AdminUser,
		Password:                 c.AdminPassword.Reveal(),
		Protocol:                 2,
		DisableIdentity:          true,
		MaxRetries:               -1,
		PoolSize:                 1,
		DialTimeout:              2 * time.Second,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		TLSConfig:                tlsConf,
	})
	defer rdb.Close()
	sum := sha256.Sum256([]byte(pw.Reveal()))
	if err := rdb.Do(ctx, "ACL", "SETUSER", c.User, "resetpass", "#"+hex.EncodeToString(sum[:])).Err(); err != nil {
		return fmt.Errorf("ACL SETUSER %s resetpass: %w", c.User, err)
	}
	if err := rdb.Do(ctx, "CLIENT", "KILL", "USER", c.User).Err(); err != nil && !noSuchClient(err) {
		return fmt.Errorf("CLIENT KILL USER %s: %w", c.User, err)
	}
	return nil
}

// noSuchClient: CLIENT KILL USER with no connection of that user answers
// with an error on older servers.
func noSuchClient(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "no such client")
}

package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/sandboxer/sandboxer/state"
)

// Redis data moves key by key over the admin connection: DUMP gives each
// value in RDB encoding (with the RDB version and a CRC64, module types
// included), RESTORE … REPLACE puts it back. The server runs without
// persistence and with DEBUG disabled, and a restart would change its
// port, so loading a whole RDB file is not an option; RESTORE needs
// neither. The handed-out user cannot RESTORE (@dangerous); the admin can.

// ClientAs is redissvc.Client for c's endpoint as user, over TLS when c
// carries a CA. A CA that does not parse fails closed: a TLS config that
// trusts nothing, so every handshake is refused.
func ClientAs(c state.Credentials, user string, password state.Secret) *redis.Client {
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		tlsConf = &tls.Config{RootCAs: x509.NewCertPool(), ServerName: c.Host, MinVersion: tls.VersionTLS12}
	}
	return Client(c.Host, c.Port, user, password, tlsConf)
}

// redisEntry is one line of the dump.
type redisEntry struct {
	DB    int    `json:"db"`
	Key   []byte `json:"key"`
	TTLms int64  `json:"ttl_ms,omitempty"` // 0: no expiry
	Value []byte `json:"value"`
}

const redisScanCount = 1000

// Dump writes every key of every database as JSON lines.
// Dump writes every key of every database of the instance c reaches as
// JSON lines, over the admin connection.
func Dump(ctx context.Context, c state.Credentials, w io.Writer) error {
	admin := ClientAs(c, c.AdminUser, c.AdminPassword)
	defer admin.Close()
	info, err := admin.Info(ctx, "keyspace").Result()
	if err != nil {
		return fmt.Errorf("INFO keyspace: %w", err)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, db := range keyspaceDBs(info) {
		if err := dumpDB(ctx, c, db, enc); err != nil {
			return fmt.Errorf("database %d: %w", db, err)
		}
	}
	return bw.Flush()
}

func dumpDB(ctx context.Context, c state.Credentials, db int, enc *json.Encoder) error {
	client := ClientAs(c, c.AdminUser, c.AdminPassword)
	defer client.Close()
	// One connection for everything that follows, so SELECT sticks: a
	// pipeline of the pooled client may run on a new connection (in
	// database 0), even with a pool of one.
	rdb := client.Conn()
	defer rdb.Close()
	if db != 0 {
		if err := rdb.Select(ctx, db).Err(); err != nil {
			return err
		}
	}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, "", redisScanCount).Result()
		if err != nil {
			return fmt.Errorf("SCAN: %w", err)
		}
		if len(keys) > 0 {
			pipe := rdb.Pipeline()
			dumps := make([]*redis.StringCmd, len(keys))
			ttls := make([]*redis.DurationCmd, len(keys))
			for i, k := range keys {
				dumps[i] = pipe.Dump(ctx, k)
				ttls[i] = pipe.PTTL(ctx, k)
			}
			_, _ = pipe.Exec(ctx) // errors are per command, checked below
			for i, k := range keys {
				v, err := dumps[i].Result()
				if err == redis.Nil {
					continue // expired or deleted since SCAN saw it
				}
				if err != nil {
					return fmt.Errorf("DUMP: %w", err)
				}
				e := redisEntry{DB: db, Key: []byte(k), Value: []byte(v)}
				if ttl, err := ttls[i].Result(); err == nil && ttl > 0 {
					e.TTLms = ttl.Milliseconds()
				}
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
		}
		cursor = next
		if cursor == 0 {
			return nil
		}
	}
}

// keyspaceDBs reads the database numbers from INFO keyspace lines like
// "db0:keys=1,expires=0,avg_ttl=0".
func keyspaceDBs(info string) []int {
	var out []int
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "db")
		if !ok {
			continue
		}
		num, _, ok := strings.Cut(rest, ":")
		if n, err := strconv.Atoi(num); ok && err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Load replaces every database's keys with the dump's, in one
// MULTI/EXEC: other clients see the old data or the new, never a mix, and
// a dump that cannot be read changes nothing.
func Load(ctx context.Context, c state.Credentials, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var entries []redisEntry
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var e redisEntry
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("read dump: %w", err)
		}
		entries = append(entries, e)
	}
	admin := ClientAs(c, c.AdminUser, c.AdminPassword)
	defer admin.Close()
	cmds, err := admin.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.FlushAll(ctx)
		cur := 0
		for _, e := range entries {
			if e.DB != cur {
				pipe.Do(ctx, "SELECT", e.DB)
				cur = e.DB
			}
			pipe.Do(ctx, "RESTORE", e.Key, e.TTLms, e.Value, "REPLACE")
		}
		if cur != 0 {
			pipe.Do(ctx, "SELECT", 0)
		}
		return nil
	})
	if err != nil {
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				return fmt.Errorf("load keys: %w", cmd.Err())
			}
		}
		return fmt.Errorf("load keys: %w", err)
	}
	return nil
}

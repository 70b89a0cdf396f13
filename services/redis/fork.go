package redis

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// Forks (sandboxer fork, issue 32): the data is captured by a BGSAVE,
// whose fork(2) is the instant (the server goes on serving while its
// child writes the RDB file, keys with their expiry times), and a copy
// starts from that file (ForkArgs). Called inside PostgreSQL's hold (the
// runtime's during), the save's instant is the same as the database's.
// No CLIENT PAUSE is needed: nothing of the save waits for writers.

// ForkSize is the memory the data takes (INFO memory's used_memory).
func ForkSize(ctx context.Context, c state.Credentials) (int64, error) {
	rdb := ClientAs(c, c.AdminUser, c.AdminPassword)
	defer rdb.Close()
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("measure the data: %w", err)
	}
	v, ok := infoField(info, "used_memory")
	if !ok {
		return 0, errors.New("measure the data: INFO memory has no used_memory")
	}
	return strconv.ParseInt(v, 10, 64)
}

// ForkCapture starts a BGSAVE, runs during, and waits for the save to
// be written; the copy is the RDB file.
func ForkCapture(ctx context.Context, c state.Credentials, during func(context.Context) error) (contract.ForkCopy, error) {
	rdb := ClientAs(c, c.AdminUser, c.AdminPassword)
	defer rdb.Close()
	return capture(ctx, rdb, during)
}

// ForkConnect makes the admin connection ahead of a capture inside
// another service's hold (contract.ForkConnector): there the BGSAVE is
// one round trip on it. account is the server's user (ForkClean).
func ForkConnect(ctx context.Context, c state.Credentials, account string) (contract.Forker, func(), error) {
	rdb := ClientAs(c, c.AdminUser, c.AdminPassword)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("connect ahead of the fork: %w", err)
	}
	return connectedFork{rdb: rdb, account: account}, func() { _ = rdb.Close() }, nil
}

// connectedFork is ForkConnect's Forker: its capture uses the connection
// made ahead.
type connectedFork struct {
	rdb     *redis.Client
	account string
}

func (f connectedFork) ForkSize(ctx context.Context, in contract.Instance) (int64, error) {
	return ForkSize(ctx, in.Creds)
}

func (f connectedFork) ForkCapture(ctx context.Context, _ contract.Instance, _ string, during func(context.Context) error) (contract.ForkCopy, error) {
	return capture(ctx, f.rdb, during)
}

func (f connectedFork) ForkClean(ctx context.Context, in contract.Instance, _ string, c contract.ForkCopy) error {
	return ForkClean(ctx, in.Run, f.account, c)
}

func (connectedFork) ForkArgs(dir string, c contract.ForkCopy) []string { return ForkArgs(dir, c) }

// capture is ForkCapture on the client rdb.
func capture(ctx context.Context, rdb *redis.Client, during func(context.Context) error) (contract.ForkCopy, error) {
	start := time.Now()
	if err := rdb.BgSave(ctx).Err(); err != nil {
		return contract.ForkCopy{}, fmt.Errorf("start a background save: %w", err)
	}
	out := contract.ForkCopy{Method: "rdb", Held: time.Since(start)}
	if during != nil {
		if err := during(ctx); err != nil {
			return out, err
		}
	}
	for {
		info, err := rdb.Info(ctx, "persistence").Result()
		if err != nil {
			return out, fmt.Errorf("wait for the background save: %w", err)
		}
		if v, _ := infoField(info, "rdb_bgsave_in_progress"); v == "0" {
			if st, _ := infoField(info, "rdb_last_bgsave_status"); st != "ok" {
				return out, fmt.Errorf("the background save failed (status %q)", st)
			}
			break
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	conf, err := rdb.ConfigGet(ctx, "dir").Result()
	if err != nil {
		return out, fmt.Errorf("find the saved file: %w", err)
	}
	file, err := rdb.ConfigGet(ctx, "dbfilename").Result()
	if err != nil {
		return out, fmt.Errorf("find the saved file: %w", err)
	}
	if conf["dir"] == "" || file["dbfilename"] == "" {
		return out, errors.New("find the saved file: CONFIG GET dir/dbfilename said nothing")
	}
	out.Path = path.Join(conf["dir"], file["dbfilename"])
	return out, nil
}

// ForkClean removes the saved file from the source's container, as the
// server's user (account), who wrote it.
func ForkClean(ctx context.Context, run contract.Runner, account string, c contract.ForkCopy) error {
	if c.Path == "" || !path.IsAbs(c.Path) {
		return nil
	}
	return run.Exec(ctx, account, []string{"rm", "-f", "--", c.Path}, nil)
}

// ForkArgs point the copy's server at the saved file copied into dir,
// which it loads when it starts.
func ForkArgs(dir string, c contract.ForkCopy) []string {
	return []string{"--dir", dir, "--dbfilename", path.Base(c.Path)}
}

// infoField reads name's value from an INFO answer.
func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// The Service's fork methods (contract.Forker).

func (Service) ForkSize(ctx context.Context, in contract.Instance) (int64, error) {
	return ForkSize(ctx, in.Creds)
}

func (Service) ForkCapture(ctx context.Context, in contract.Instance, _ string, during func(context.Context) error) (contract.ForkCopy, error) {
	return ForkCapture(ctx, in.Creds, during)
}

func (Service) ForkClean(ctx context.Context, in contract.Instance, _ string, c contract.ForkCopy) error {
	return ForkClean(ctx, in.Run, Service{}.Account(), c)
}

func (Service) ForkArgs(dir string, c contract.ForkCopy) []string { return ForkArgs(dir, c) }

func (Service) ForkConnect(ctx context.Context, in contract.Instance) (contract.Forker, func(), error) {
	return ForkConnect(ctx, in.Creds, Service{}.Account())
}

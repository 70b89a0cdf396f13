package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/server"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// tenantsPoll is how often serve looks at the tenants file for a change
// (SIGHUP reloads at once).
const tenantsPoll = 2 * time.Second

// onDemandBlocks are the names of cfg's on-demand blocks, sorted: what a
// tenants file may name.
func onDemandBlocks(cfg *config.Config) []string {
	var out []string
	for name, sb := range cfg.Sandboxes {
		if sb.OnDemand {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// watchTenants reloads the tenants file at path into api whenever it
// changes (its size or modification time) or SIGHUP comes, until ctx
// ends. A bad file is logged (file:line:col; it never holds a token, and
// errors never quote a hash) and the previous set stays.
func watchTenants(ctx context.Context, path string, blocks []string, api *server.Server, logger *slog.Logger, kubeAuth bool) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(tenantsPoll)
	defer t.Stop()
	last := fileStamp(path)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-t.C:
			if fileStamp(path) == last {
				continue
			}
		}
		last = fileStamp(path)
		set, err := tenants.Load(path, blocks)
		if err != nil {
			logger.Error("tenants file not reloaded: keeping the previous one", "file", path, "error", err.Error())
			continue
		}
		api.SetTenants(set)
		logger.Info("tenants file reloaded", "file", path, "tenants", len(set.Names()))
		warnServiceAccounts(logger, set, kubeAuth)
	}
}

type stamp struct {
	size int64
	mod  time.Time
}

func fileStamp(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{fi.Size(), fi.ModTime()}
}

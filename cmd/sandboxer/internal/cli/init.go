package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
)

// InitOptions are the flags of `sandboxer init`.
type InitOptions struct {
	f *Factory
}

// starterConfig is what `init` writes: the smallest useful configuration.
const starterConfig = `# sandboxer configuration: see https://github.com/sandboxer/sandboxer#quick-start
#
# With no image configured, the plan picks the official image that has the
# features each sandbox asks for (postgres:17; pgvector/pgvector:pg17 for
# vector; postgis/postgis:17-3.5 for postgis; redis:8) and shows it. A
# configured image always wins:
#
# provider "docker" {
#   image "postgres" { ref = "postgres:17" }
#   image "redis"    { ref = "redis:8" }
# }

project "app" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["pg_trgm"]
  }
}

sandbox "dev" {
  project = project.app
  ttl     = "8h"
}

output "database_url" {
  value     = sandbox.dev.postgres.url
  sensitive = true
}
`

func newInitCmd(f *Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{f: f}
	return &cobra.Command{
		Use:   "init",
		Short: "Write a starter main.sbx.hcl (never overwrites)",
		Long: "Write a commented starter configuration (main.sbx.hcl) into the\n" +
			"configuration directory: a project, a sandbox and an output to edit. It\n" +
			"refuses a directory that already holds a configuration or does not exist.",
		Example: "  sandboxer init\n" +
			"  sandboxer --chdir ./sandboxes init",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return initRun(opts)
		},
	}
}

func initRun(opts *InitOptions) error {
	dir := opts.f.Dir()
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("init: %s is not a directory", dir)
	}
	// A second starter next to an existing configuration would declare the
	// same project twice.
	if existing, _ := filepath.Glob(filepath.Join(dir, "*"+config.FileSuffix)); len(existing) > 0 {
		return fmt.Errorf("%s already holds a configuration (%s); init never adds to one", dir, filepath.Base(existing[0]))
	}
	path := filepath.Join(dir, "main.sbx.hcl")
	// O_EXCL makes "refuses to overwrite" hold even against a racing init.
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; init never overwrites a configuration", path)
	}
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if _, err := file.WriteString(starterConfig); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(opts.f.IO.Out, "Wrote %s. Next: sandboxer plan\n", path)
	return nil
}

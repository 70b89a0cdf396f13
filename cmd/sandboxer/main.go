// Command sandboxer plans, applies and destroys disposable service sandboxes
// declared in HCL. All behaviour lives in internal/cli.
package main

import (
	"os"

	"github.com/sandboxer/sandboxer/cmd/sandboxer/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}

// Command sandboxer-kubernetes serves the kubernetes runtime to sandboxer,
// which starts it when a configuration puts sandboxes on Kubernetes; see
// internal/plugin.
package main

import (
	"os"

	"github.com/sandboxer/sandboxer/providers/kubernetes/kubeplugin"
)

func main() { os.Exit(kubeplugin.Main()) }

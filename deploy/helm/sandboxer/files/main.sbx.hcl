# The configuration serve gets when config.files is empty: sandboxes on
# the cluster serve runs in. In a pod the kubernetes provider uses the
# in-cluster configuration, and sandboxes go in the release's namespace
# unless namespace is set here (set rbac.namespace to the same).
provider "kubernetes" {}

project "app" {
  services = ["postgres", "redis"]
}

# Agents ask for their own over the API or MCP.
sandbox "agent" {
  project   = project.app
  on_demand = true
  ttl       = "2h"
}

# Sandboxes on Kubernetes: the quick start's project, on a cluster.
#
# The provider reads KUBECONFIG (then ~/.kube/config, then the in-cluster
# configuration when sandboxer runs in a pod). Against the local cluster
# `make kube` starts on this machine:
#
#   export KUBECONFIG="$(make -s kube | tail -1)"
#   sandboxer apply --auto-approve
#   sandboxer env sandbox.dev
#
# This machine has no container registry, so the image blocks name the
# images `make images` builds, which `make kube` imports into the cluster's
# containerd. Elsewhere, delete them to run the official images.
provider "kubernetes" {
  namespace = "default"
  image "postgres" {
    ref = "sandboxer.local/postgres:17"
  }
  image "redis" {
    ref     = "sandboxer.local/redis:7"
    modules = { search = "/usr/lib/redis/modules/redisearch.so" }
  }
}

project "shop" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["vector"]
    redis    = ["search"]
  }
}

sandbox "dev" {
  project = project.shop
  ttl     = "8h"
}

# Agents ask for their own: sandboxer request sandbox.agent --key NAME
sandbox "agent" {
  project   = project.shop
  on_demand = true
  ttl       = "2h"
}

# For clients outside the cluster (the pod IP) and inside it (the
# sandbox's Service name).
output "database_url" {
  value     = sandbox.dev.postgres.url
  sensitive = true
}

output "in_cluster_database_url" {
  value     = sandbox.dev.postgres.network_url
  sensitive = true
}

# The tenants of `sandboxer serve --tenants tenants.hcl`. serve reloads
# this file when it changes (or on SIGHUP); a bad file is logged with its
# file:line:col and the previous one stays in force.
#
# Tokens are stored only as hashes: "sha256:" and the hex SHA-256 of the
# token, e.g.  printf %s "$TOKEN" | sha256sum
# (these are the hashes of acme-example-token-1, acme-example-token-2 and
# beta-example-token; never use those). Two tokens for one tenant let
# you rotate: add the new one, move the agents, remove the old one.

tenant "acme" {
  tokens = [
    "sha256:0b36bc3241c198bd6e2ca4d0fe4c390a89b31fdde7fc287bd7a4617df307090f",
    "sha256:636f15a079866347f7b5b98935a221978003b810f139a6b9a172b346ee6b46dd",
  ]
  # The on-demand blocks it may use (default: all).
  blocks = ["agent", "cache"]
  quota {
    instances           = 5    # live instances at once, across replicas
    max_ttl             = "4h" # the longest ttl it may ask for or extend to
    requests_per_minute = 600  # per serve process
    databases           = 20   # live databases per test (POST /v1/databases)
    snapshots           = 10   # snapshot names it holds
  }
}

tenant "beta" {
  tokens = ["sha256:1bc5f28cf1585659374521068a551b39b90f9857c148512c3c1678c8e8679821"]
  blocks = ["cache"]
  quota {
    instances = 2
    max_ttl   = "1h"
  }
}

# Pods as tenants (serve --kube-auth): an agent pod presents its projected
# ServiceAccount token (audience "sandboxer"); the cluster reviews it, and
# the tenant whose service_accounts admit the pod's ServiceAccount is the
# one it acts for. No secret is shared with the pods, and none is here.
# "NAMESPACE:NAME" admits one ServiceAccount, "NAMESPACE:*" every
# ServiceAccount of the namespace (its default rule; a tenant that names
# a ServiceAccount itself wins over it). A pattern belongs to one tenant.
# A tenant may have tokens, service_accounts or both.
tenant "runner" {
  service_accounts = ["agents:runner"]
  blocks           = ["agent"]
  quota {
    instances = 3
  }
}

tenant "team-b" {
  service_accounts = ["team-b:*"]
  quota {
    instances = 10
    max_ttl   = "2h"
  }
}

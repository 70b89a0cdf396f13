# A PostgreSQL feature on mysql, and MySQL plugins that are shipped but
# kept off the allowlist (FEDERATED reaches other servers, CONNECT reads
# files): refused where they are written, naming the allowlist.
project "shop" {
  services = ["postgres", "mysql"]
  extensions = {
    postgres = ["pg_trgm"]
    mysql    = ["archive", "pg_trgm"] # ERROR: Feature not allowed
  }
}

sandbox "ci" {
  project    = project.shop
  extensions = { mysql = ["federated", "connect"] } # ERROR: Feature not allowed
}

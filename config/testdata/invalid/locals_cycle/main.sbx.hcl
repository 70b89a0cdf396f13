locals {
  a    = local.b # ERROR: Cycle in local values
  b    = local.c
  c    = "${local.a}-x"
  self = local.self # ERROR: Cycle in local values
  d    = upper(local.a)
}

project "p" {
  services = [local.d]
}

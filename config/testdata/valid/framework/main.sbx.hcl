project "shop" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["vector"] }
  database   = "shop_test"
  env_prefix = "ROBOCO_TEST_"

  profile "rag" {
    services   = ["postgres", "redis"]
    extensions = { postgres = ["vector", "pg_trgm"], redis = ["search"] }
  }

  profile "sql" {
    extensions = { postgres = ["citext"] }
  }
}

sandbox "django" {
  project  = project.shop
  database = "django_app"
}

sandbox "matrix" {
  project    = project.shop
  for_each   = toset(["a", "b"])
  database   = "test_${each.key}"
  env_prefix = "M_${upper(each.key)}_"
}

sandbox "agent" {
  project   = project.shop
  on_demand = true
}

# sandboxer test: `sandboxer test --in-memory` runs these in a second with
# no engine (make test does); `sandboxer test` runs them against Docker.
# Each file has its own state; what the apply runs create is destroyed
# when the file ends.

run "fresh_state_creates_each_suite" {
  command = plan

  assert {
    condition     = plan.create == 2 && plan.replace == 0
    error_message = "A fresh state should create one sandbox per suite."
  }
  assert {
    condition     = sandbox.suite["search"].features.redis == ["search"]
    error_message = "The search suite needs RediSearch."
  }
}

run "apply" {
  assert {
    condition     = sandbox.suite["unit"].action == "create"
    error_message = "The unit suite should be created."
  }
}

run "second_plan_reuses" {
  command = plan

  assert {
    condition     = plan.reuse == 2 && plan.create == 0 && plan.replace == 0
    error_message = "A second plan must reuse every sandbox: a replace would rotate credentials mid-run."
  }
}

run "new_suite_leaves_the_others_alone" {
  command = plan

  variables {
    suites = {
      unit   = ["postgres"]
      search = ["postgres", "redis"]
      vector = ["postgres"]
    }
  }

  assert {
    condition     = plan.create == 1 && plan.reuse == 2
    error_message = "Adding a suite must not touch the running ones."
  }
}

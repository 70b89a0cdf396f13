# Reads prior_state and planned_values, as Atlantis-style summaries do:
# warn about every resource in the prior state that the plan does not
# keep, and about a plan that grows past a size.
package main

import rego.v1

planned contains r.address if {
	some r in input.planned_values.root_module.resources
}

warn contains msg if {
	some r in input.prior_state.values.root_module.resources
	not r.address in planned
	msg := sprintf("%s leaves the state (%s)", [r.address, r.provider_name])
}

warn contains msg if {
	n := count(input.planned_values.root_module.resources)
	n > 3
	msg := sprintf("the plan leaves %d resources, more than 3", [n])
}

warn contains msg if {
	some r in input.configuration.root_module.resources
	not input.configuration.provider_config[r.provider_config_key]
	msg := sprintf("%s: provider %s is not configured", [r.address, r.provider_config_key])
}

# Deny any plan that deletes a resource (a replace deletes too).
package main

import rego.v1

deny contains msg if {
	some rc in input.resource_changes
	"delete" in rc.change.actions
	msg := sprintf("%s: the plan deletes it (actions %v)", [rc.address, rc.change.actions])
}

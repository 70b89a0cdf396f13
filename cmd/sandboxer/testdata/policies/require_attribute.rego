# Require an attribute on everything created or updated (in Terraform:
# tags.owner on every aws_instance).
package main

import rego.v1

changing(rc) if {
	some action in rc.change.actions
	action in {"create", "update"}
}

deny contains msg if {
	some rc in input.resource_changes
	rc.type == "sandbox" # adapted: was "aws_instance"
	changing(rc)
	not rc.change.after.ttl_seconds # adapted: was rc.change.after.tags.owner
	msg := sprintf("%s: ttl_seconds is required", [rc.address])
}

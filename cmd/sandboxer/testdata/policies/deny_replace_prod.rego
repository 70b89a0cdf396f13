# Deny replacing the resource named prod.
package main

import rego.v1

deny contains msg if {
	some rc in input.resource_changes
	rc.mode == "managed"
	rc.type == "sandbox" # adapted: was "aws_db_instance"
	rc.name == "prod"
	rc.change.actions == ["create", "delete"]
	msg := sprintf("%s: prod must not be replaced", [rc.address])
}

deny contains msg if {
	some rc in input.resource_changes
	rc.mode == "managed"
	rc.type == "sandbox" # adapted: was "aws_db_instance"
	rc.name == "prod"
	rc.change.actions == ["delete", "create"]
	msg := sprintf("%s: prod must not be replaced", [rc.address])
}

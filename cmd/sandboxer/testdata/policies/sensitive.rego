# Secrets stay masked: an attribute named like a secret must be marked in
# after_sensitive and must not be known in after.
package main

import rego.v1

secret_attrs := {"password", "credentials"}

deny contains msg if {
	some rc in input.resource_changes
	rc.change.after != null
	some attr in secret_attrs
	object.get(rc.change.after, attr, null) != null
	msg := sprintf("%s: %s is in the plan in clear", [rc.address, attr])
}

warn contains msg if {
	some rc in input.resource_changes
	rc.change.after != null
	not rc.change.after_sensitive.credentials # adapted: was .password
	msg := sprintf("%s: credentials are not marked sensitive", [rc.address])
}

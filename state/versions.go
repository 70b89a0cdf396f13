package state

// Versions returns the record's extension versions, service → extension
// → version, never nil, so JSON shows {} rather than null.
func (r *Record) Versions() map[string]map[string]string {
	if r.ExtensionVersions == nil {
		return map[string]map[string]string{}
	}
	return r.ExtensionVersions
}

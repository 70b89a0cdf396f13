package state

import "time"

// decodeCurrent decodes a record stored at the current schema version
// without reflection: encoding/json spends ~40µs on each record, which for
// a state of 1,000 sandboxes is most of a plan's time.
//
// It accepts only what decodeStrict would accept and decode to an equal
// Record: JSON as encodeRecord writes it, in any field order and spacing,
// with null anywhere a value may be. Anything else (a duplicate, unknown or
// differently-cased key, another schema version, a number that is not a
// plain integer, trailing data, a type mismatch) makes ok false, and the
// caller decodes with encoding/json, which says what is wrong. A field
// added to Record and not taught here is therefore slow, never lost.
//
// names, when not nil, is shared by the records of one read so that the
// names every record repeats (services, features, hosts) are allocated once.
func decodeCurrent(data []byte, names *interner) (rec *Record, ok bool) {
	r := &reader{b: data, interned: names}
	rec = new(Record)
	version, seen := 0, false
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "schema_version":
			fields.once(r, 0)
			version, seen = r.int(), true
		case "address":
			fields.once(r, 1)
			rec.Address = r.str()
		case "project":
			fields.once(r, 2)
			rec.Project = r.name()
		case "on_demand":
			fields.once(r, 3)
			rec.OnDemand = r.bool()
		case "services":
			fields.once(r, 4)
			rec.Services = r.names()
		case "features":
			fields.once(r, 5)
			rec.Features = r.strsMap()
		case "available_extensions":
			fields.once(r, 6)
			rec.AvailableExtensions = r.strsMap()
		case "extension_versions":
			fields.once(r, 12)
			rec.ExtensionVersions = r.strMapMap()
		case "credentials":
			fields.once(r, 7)
			rec.Credentials = r.credentialsMap()
		case "resources":
			fields.once(r, 8)
			rec.Resources = r.resources()
		case "created_at":
			fields.once(r, 9)
			rec.CreatedAt = r.time()
		case "expires_at":
			fields.once(r, 10)
			rec.ExpiresAt = r.time()
		case "generation":
			fields.once(r, 11)
			rec.Generation = r.int()
		case "reach":
			fields.once(r, 14)
			rec.Reach = r.reach()
		case "seed_digest":
			fields.once(r, 13)
			rec.SeedDigest = r.str()
		case "label_address":
			fields.once(r, 15)
			rec.LabelAddress = r.str()
		case "owner":
			fields.once(r, 16)
			rec.Owner = r.name()
		default:
			r.fail()
		}
	})
	r.end()
	if r.bad || !seen || version != SchemaVersion {
		return nil, false
	}
	return rec, true
}

func (r *reader) credentialsMap() map[string]Credentials {
	if r.null() {
		return nil
	}
	out := map[string]Credentials{}
	r.object(func(key []byte) {
		svc := r.intern(key)
		if _, dup := out[svc]; dup {
			r.fail()
			return
		}
		out[svc] = r.credentials()
	})
	return out
}

func (r *reader) credentials() Credentials {
	var c Credentials
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "host":
			fields.once(r, 0)
			c.Host = r.name()
		case "port":
			fields.once(r, 1)
			c.Port = r.int()
		case "user":
			fields.once(r, 2)
			c.User = r.name()
		case "password":
			fields.once(r, 3)
			c.Password = Secret(r.str())
		case "database":
			fields.once(r, 4)
			c.Database = r.name()
		case "admin_user":
			fields.once(r, 5)
			c.AdminUser = r.name()
		case "admin_password":
			fields.once(r, 6)
			c.AdminPassword = Secret(r.str())
		case "network_host":
			fields.once(r, 7)
			c.NetworkHost = r.name()
		case "network_port":
			fields.once(r, 8)
			c.NetworkPort = r.int()
		case "ca":
			fields.once(r, 9)
			c.CA = r.str()
		case "ca_file":
			fields.once(r, 10)
			c.CAFile = r.str()
		default:
			r.fail()
		}
	})
	return c
}

func (r *reader) reach() Reach {
	var re Reach
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "networks":
			fields.once(r, 0)
			re.Networks = r.names()
		case "publish_address":
			fields.once(r, 1)
			re.PublishAddress = r.name()
		case "advertise_host":
			fields.once(r, 2)
			re.AdvertiseHost = r.name()
		case "tls":
			fields.once(r, 3)
			re.TLS = r.bool()
		default:
			r.fail()
		}
	})
	return re
}

func (r *reader) resources() Resources {
	var res Resources
	var fields bitset
	r.object(func(key []byte) {
		switch string(key[1 : len(key)-1]) {
		case "network":
			fields.once(r, 0)
			res.Network = r.str()
		case "containers":
			fields.once(r, 1)
			res.Containers = r.strMap()
		case "volumes":
			fields.once(r, 2)
			res.Volumes = r.strs()
		case "runtime":
			fields.once(r, 3)
			res.Runtime = r.str()
		case "namespace":
			fields.once(r, 4)
			res.Namespace = r.str()
		case "pod":
			fields.once(r, 5)
			res.Pod = r.str()
		case "owned":
			fields.once(r, 6)
			res.Owned = r.strMap()
		default:
			r.fail()
		}
	})
	return res
}

// time decodes a timestamp with time.Time's own UnmarshalJSON, as
// encoding/json does.
func (r *reader) time() time.Time {
	var t time.Time
	if r.null() {
		return t
	}
	raw := r.rawString()
	if !r.bad && t.UnmarshalJSON(raw) != nil {
		r.fail()
	}
	return t
}

// bitset tracks which fields of one object have been seen, to refuse
// duplicates (encoding/json would silently keep the last, or merge maps).
type bitset uint32

func (s *bitset) once(r *reader, bit uint) {
	if *s&(1<<bit) != 0 {
		r.fail()
	}
	*s |= 1 << bit
}

// strMapMap reads extension_versions: service → name → version.
func (r *reader) strMapMap() map[string]map[string]string {
	if r.null() {
		return nil
	}
	out := map[string]map[string]string{}
	r.object(func(key []byte) {
		k := r.intern(key)
		if _, dup := out[k]; dup {
			r.fail()
			return
		}
		out[k] = r.strMap()
	})
	return out
}

package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// storedRecord is the on-disk layout of a record: the Record's own fields,
// flattened, plus the schema version that wrote them. Record must therefore
// never grow a field whose JSON name is "schema_version".
type storedRecord struct {
	SchemaVersion int `json:"schema_version"`
	*Record
}

// encodeRecord returns the bytes stored for rec. encoding/json sorts map
// keys, so equal records encode to equal bytes, which is what lets the
// serial move only on a real change.
func encodeRecord(rec *Record) ([]byte, error) {
	return json.Marshal(storedRecord{SchemaVersion: SchemaVersion, Record: rec})
}

// upgradeStep rewrites a stored record object from version from to from+1.
// Steps work on the raw JSON object because the Go type of an old version
// no longer exists.
type upgradeStep struct {
	from  int
	apply func(obj map[string]json.RawMessage) error
}

// recordUpgrades is the production chain, one step per SchemaVersion bump.
// It is a function rather than a variable so that nothing can change it at
// run time.
func recordUpgrades() []upgradeStep {
	return []upgradeStep{{from: 1, apply: upgradeV1ToV2}, {from: 2, apply: upgradeV2ToV3}}
}

// upgradeV1ToV2: version 2 added seed_digest. A version 1 record was
// provisioned before seeds existed, so it had none: the field stays
// absent (empty), and a configuration that names a seed plans a
// seed_changed replace for it.
func upgradeV1ToV2(obj map[string]json.RawMessage) error {
	if _, ok := obj["seed_digest"]; ok {
		return fmt.Errorf("a version 1 record has no seed_digest field")
	}
	return nil
}

// upgradeRecord brings obj from version from to version to, one step at a
// time, stamping the version after each step.
func upgradeRecord(obj map[string]json.RawMessage, from, to int, steps []upgradeStep) error {
	for v := from; v < to; v++ {
		step, ok := findStep(steps, v)
		if !ok {
			return fmt.Errorf("no upgrade from schema version %d to %d", v, v+1)
		}
		if err := step.apply(obj); err != nil {
			return fmt.Errorf("upgrade schema version %d to %d: %w", v, v+1, err)
		}
		obj["schema_version"] = json.RawMessage(fmt.Sprint(v + 1))
	}
	return nil
}

func findStep(steps []upgradeStep, from int) (upgradeStep, bool) {
	for _, s := range steps {
		if s.from == from {
			return s, true
		}
	}
	return upgradeStep{}, false
}

// futureRecordError is returned by decodeRecord with the version found; the
// caller turns it into a FutureSchemaError naming the file and address.
type futureRecordError struct{ version int }

func (e futureRecordError) Error() string {
	return fmt.Sprintf("schema version %d, written by a newer sandboxer", e.version)
}

// decodeRecord decodes stored bytes written at any version up to current,
// running the upgrade chain for older ones. Unknown fields are an error:
// silently dropping them would lose them on the next write.
//
// names may be nil; see decodeCurrent.
func decodeRecord(data []byte, current int, steps []upgradeStep, names *interner) (*Record, error) {
	// Fast path: a well-formed record at the current version, decoded
	// without reflection.
	if current == SchemaVersion {
		if rec, ok := decodeCurrent(data, names); ok {
			return rec, nil
		}
	}
	// Then one strict pass with encoding/json, which also explains what is
	// wrong with a record the fast path would not take.
	sr, err := decodeStrict(data)
	if err == nil && sr.SchemaVersion == current {
		return sr.Record, nil
	}

	v, verr := storedVersion(data)
	switch {
	case verr != nil:
		return nil, verr
	case v > current:
		return nil, futureRecordError{version: v}
	case v == current:
		if err == nil { // only with duplicate schema_version keys
			err = errors.New("ambiguous schema_version")
		}
		return nil, err
	default:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, err
		}
		if err := upgradeRecord(obj, v, current, steps); err != nil {
			return nil, err
		}
		up, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		sr, err := decodeStrict(up)
		if err != nil {
			return nil, fmt.Errorf("after upgrade from schema version %d: %w", v, err)
		}
		return sr.Record, nil
	}
}

// upgradeV2ToV3 records what every earlier instance was: published on
// 127.0.0.1 without TLS, on no user network. The new credential fields
// (network endpoint, CA) stay absent, which is what they mean for it.
func upgradeV2ToV3(obj map[string]json.RawMessage) error {
	if _, ok := obj["reach"]; ok {
		return errors.New(`version 2 record already has a "reach" field`)
	}
	obj["reach"] = json.RawMessage(`{"publish_address":"127.0.0.1","advertise_host":"127.0.0.1"}`)
	return nil
}

func decodeStrict(data []byte) (storedRecord, error) {
	sr := storedRecord{Record: new(Record)}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sr); err != nil {
		return sr, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return sr, errors.New("trailing data after the record")
	}
	return sr, nil
}

// storedVersion reports the schema version of stored bytes without
// decoding the rest, for checks before overwriting.
func storedVersion(data []byte) (int, error) {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return 0, err
	}
	if head.SchemaVersion == nil {
		return 0, errors.New("no schema_version field")
	}
	return *head.SchemaVersion, nil
}

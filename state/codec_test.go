package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// upgradeV0ToV1 upgrades a synthetic, test-only version 0 layout: one
// service per record, its credentials flat on the record, and a unix
// timestamp.
func upgradeV0ToV1(obj map[string]json.RawMessage) error {
	var v0 struct {
		Service  string `json:"service"`
		Port     int    `json:"port"`
		Password string `json:"password"`
		Created  int64  `json:"created_unix"`
	}
	b, _ := json.Marshal(obj)
	if err := json.Unmarshal(b, &v0); err != nil {
		return err
	}
	if v0.Service == "" {
		return errors.New("no service")
	}
	for _, k := range []string{"service", "port", "password", "created_unix"} {
		delete(obj, k)
	}
	set := func(k string, v any) {
		obj[k], _ = json.Marshal(v)
	}
	set("services", []string{v0.Service})
	set("credentials", map[string]Credentials{v0.Service: {Host: "127.0.0.1", Port: v0.Port, Password: Secret(v0.Password)}})
	set("created_at", time.Unix(v0.Created, 0).UTC())
	return nil
}

// testSteps is the synthetic v0 step followed by the production chain.
var testSteps = append([]upgradeStep{{from: 0, apply: upgradeV0ToV1}}, recordUpgrades()...)

// v1Reach is what upgradeV2ToV3 gives every earlier record.
var v1Reach = Reach{PublishAddress: "127.0.0.1", AdvertiseHost: "127.0.0.1"}

func TestDecodeRecordUpgradeChain(t *testing.T) {
	current, err := encodeRecord(sampleRecord(3))
	if err != nil {
		t.Fatal(err)
	}
	v0 := `{"schema_version":0,"address":"sandbox.old","project":"p","service":"postgres","port":5432,"password":"pw","created_unix":1767225600}`
	tests := []struct {
		name    string
		data    string
		steps   []upgradeStep
		want    *Record
		wantErr string
	}{
		{name: "current version", data: string(current), want: sampleRecord(3)},
		{
			name: "v0 upgraded", data: v0, steps: testSteps,
			want: &Record{
				Address:     "sandbox.old",
				Project:     "p",
				Services:    []string{"postgres"},
				Credentials: map[string]Credentials{"postgres": {Host: "127.0.0.1", Port: 5432, Password: "pw"}},
				CreatedAt:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
				Reach:       v1Reach,
			},
		},
		{
			name: "v1 as the previous build wrote it", steps: recordUpgrades(),
			data: `{"schema_version":1,"address":"sandbox.ci","project":"p","services":["redis"],"features":{"redis":[]},"credentials":{"redis":{"host":"127.0.0.1","port":32768,"user":"app","password":"pw"}},"resources":{"network":"n1","containers":{"redis":"c1"}},"created_at":"2026-01-01T00:00:00Z","generation":3}`,
			want: &Record{
				Address: "sandbox.ci", Project: "p", Services: []string{"redis"}, Features: map[string][]string{"redis": {}},
				Credentials: map[string]Credentials{"redis": {Host: "127.0.0.1", Port: 32768, User: "app", Password: "pw"}},
				Resources:   Resources{Network: "n1", Containers: map[string]string{"redis": "c1"}},
				CreatedAt:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Generation: 3,
				Reach: v1Reach,
			},
		},
		{name: "v2 with a reach field", data: `{"schema_version":2,"address":"a","reach":{}}`, steps: recordUpgrades(), wantErr: `version 2 record already has a "reach" field`},
		{
			name: "v2 as the previous build wrote it", steps: recordUpgrades(),
			data: `{"schema_version":2,"address":"sandbox.ci","project":"p","services":["redis"],"credentials":{"redis":{"host":"127.0.0.1","port":32768,"user":"app","password":"pw"}},"resources":{},"created_at":"2026-01-01T00:00:00Z","generation":1,"seed_digest":"sha256:ab"}`,
			want: &Record{
				Address: "sandbox.ci", Project: "p", Services: []string{"redis"},
				Credentials: map[string]Credentials{"redis": {Host: "127.0.0.1", Port: 32768, User: "app", Password: "pw"}},
				CreatedAt:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Generation: 1, SeedDigest: "sha256:ab",
				Reach: v1Reach,
			},
		},
		{name: "no step for v0", data: v0, wantErr: "no upgrade from schema version 0 to 1"},
		{name: "step fails", data: `{"schema_version":0,"address":"a"}`, steps: testSteps, wantErr: "upgrade schema version 0 to 1: no service"},
		{name: "future version", data: `{"schema_version":4,"address":"a","new_field":1}`, wantErr: "schema version 4, written by a newer sandboxer"},
		{name: "no version", data: `{"address":"a"}`, wantErr: "no schema_version field"},
		{name: "unknown field at current version", data: `{"schema_version":3,"address":"a","bogus":1}`, wantErr: `unknown field "bogus"`},
		{name: "trailing data", data: `{"schema_version":3,"address":"a"} {}`, wantErr: "after top-level value"},
		{name: "not JSON", data: `garbage`, wantErr: "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeRecord([]byte(tt.data), SchemaVersion, tt.steps, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded record (-want +got):\n%s", diff)
			}
		})
	}
}

// An upgraded record written back (at the current version) reads back
// equal, and is stable: re-encoding it gives the same bytes.
func TestUpgradedRecordRoundTrip(t *testing.T) {
	v0 := `{"schema_version":0,"address":"sandbox.old","project":"p","service":"redis","port":6379,"password":"pw","created_unix":1767225600}`
	rec, err := decodeRecord([]byte(v0), SchemaVersion, testSteps, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), fmt.Sprintf(`{"schema_version":%d,`, SchemaVersion)) {
		t.Errorf("written record not stamped with version %d: %s", SchemaVersion, data)
	}
	again, err := decodeRecord(data, SchemaVersion, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, again); diff != "" {
		t.Errorf("(-upgraded +reread):\n%s", diff)
	}
}

// Steps run in order, each stamping its version.
func TestUpgradeRecordRunsStepsInOrder(t *testing.T) {
	var trail []string
	step := func(from int) upgradeStep {
		return upgradeStep{from: from, apply: func(obj map[string]json.RawMessage) error {
			trail = append(trail, fmt.Sprintf("%d->%d at %s", from, from+1, obj["schema_version"]))
			return nil
		}}
	}
	obj := map[string]json.RawMessage{"schema_version": json.RawMessage("0")}
	// Given out of order on purpose: the chain finds steps by version.
	if err := upgradeRecord(obj, 0, 3, []upgradeStep{step(2), step(0), step(1)}); err != nil {
		t.Fatal(err)
	}
	want := []string{"0->1 at 0", "1->2 at 1", "2->3 at 2"}
	if diff := cmp.Diff(want, trail); diff != "" {
		t.Errorf("steps run (-want +got):\n%s", diff)
	}
	if got := string(obj["schema_version"]); got != "3" {
		t.Errorf("schema_version = %s, want 3", got)
	}
}

// Every version this build may meet has a way up to SchemaVersion.
func TestRecordUpgradesCoverEveryVersion(t *testing.T) {
	obj := map[string]json.RawMessage{}
	for v := 1; v < SchemaVersion; v++ {
		if _, ok := findStep(recordUpgrades(), v); !ok {
			t.Errorf("no upgrade step from schema version %d", v)
		}
	}
	if err := upgradeRecord(obj, 1, SchemaVersion, recordUpgrades()); err != nil {
		t.Error(err)
	}
}

func TestFutureSchemaRefused(t *testing.T) {
	addr := sampleRecord(1).Address
	tests := []struct {
		name     string
		tamper   func(tx *bolt.Tx) error
		wantAddr string
	}{
		{
			name: "record from a newer sandboxer",
			tamper: func(tx *bolt.Tx) error {
				return tx.Bucket(bucketSandboxes).Put([]byte(addr),
					[]byte(fmt.Sprintf(`{"schema_version":%d,"address":"%s","replicas":3}`, SchemaVersion+1, addr)))
			},
			wantAddr: addr,
		},
		{
			name: "file from a newer sandboxer",
			tamper: func(tx *bolt.Tx) error {
				return putUint64(tx.Bucket(bucketMeta), keySchemaVersion, SchemaVersion+1)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := statePath(t)
			newState(t, path, sampleRecord(1))
			rawUpdate(t, path, tt.tamper)
			hash := hashFile(t, path)
			s := Open(path)
			ops := map[string]func() error{
				"snapshot": func() error { _, err := s.Snapshot(ctx); return err },
				"get":      func() error { _, err := s.Get(ctx, addr); return err },
				"put":      func() error { return s.Put(ctx, sampleRecord(1)) },
			}
			for name, op := range ops {
				err := op()
				var fe *FutureSchemaError
				if !errors.As(err, &fe) {
					t.Fatalf("%s: err = %v, want a *FutureSchemaError", name, err)
				}
				if fe.Version != SchemaVersion+1 || fe.Supported != SchemaVersion || fe.Address != tt.wantAddr || fe.Path != path {
					t.Errorf("%s: %+v", name, fe)
				}
				if msg := err.Error(); !strings.Contains(msg, "written by a newer sandboxer") || !strings.Contains(msg, path) {
					t.Errorf("%s: message %q", name, msg)
				}
			}
			if hashFile(t, path) != hash {
				t.Errorf("file changed")
			}
		})
	}
}

// A version 1 record (written before seeds existed) reads as a record
// with no seed, and writes back at version 2 unchanged otherwise.
func TestUpgradeV1ToV2RoundTrip(t *testing.T) {
	v1 := `{"schema_version":1,"address":"sandbox.a","project":"p","services":["postgres"],"features":{"postgres":["vector"]},"resources":{},"created_at":"2026-01-01T00:00:00Z","generation":4}`
	rec, err := decodeRecord([]byte(v1), SchemaVersion, recordUpgrades(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SeedDigest != "" || rec.Generation != 4 || rec.Features["postgres"][0] != "vector" {
		t.Fatalf("upgraded: %+v", rec)
	}
	data, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	again, err := decodeRecord(data, SchemaVersion, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, again); diff != "" {
		t.Errorf("(-upgraded +reread):\n%s", diff)
	}
	if err := upgradeV1ToV2(map[string]json.RawMessage{"seed_digest": json.RawMessage(`"x"`)}); err == nil {
		t.Error("a version 1 record with seed_digest was accepted")
	}
}

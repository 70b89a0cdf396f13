package state

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fullRecord sets every field of Record, Credentials and Resources, with
// text that needs escaping; TestFullRecordSetsEveryField keeps it so.
func fullRecord() *Record {
	at := time.Date(2026, 3, 1, 10, 0, 0, 5, time.FixedZone("x", 3600))
	return &Record{
		Address:             `sandbox.app["ü \"q\" <&>"]`,
		Project:             "shop",
		OnDemand:            true,
		Services:            []string{"postgres", "redis"},
		Features:            map[string][]string{"postgres": {"pg_trgm"}, "redis": {}},
		AvailableExtensions: map[string][]string{"postgres": {"citext", "vector"}},
		ExtensionVersions:   map[string]map[string]string{"postgres": {"citext": "1.6", "vector": ""}, "redis": nil},
		Credentials: map[string]Credentials{"postgres": {
			Host: "127.0.0.1", Port: 5432, User: "app", Password: "p\\w\"d", Database: "app",
			AdminUser: "admin", AdminPassword: "a\u2028b",
			NetworkHost: "sbx-ci-postgres", NetworkPort: 5432,
			CA: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n", CAFile: "/tmp/ü/ca.pem",
		}},
		Reach: Reach{Networks: []string{"agents", "ci"}, PublishAddress: "0.0.0.0", AdvertiseHost: "db.example", TLS: true},
		Resources: Resources{Runtime: "kubernetes", Network: "net", Containers: map[string]string{"postgres": "c1"}, Volumes: []string{"v1"}, Namespace: "ns", Pod: "sbx-ci",
			Owned: map[string]string{"pod": "uid-1", "secret": "uid-2"}},
		CreatedAt:  at,
		ExpiresAt:  at.Add(time.Hour),
		Generation: -3, SeedDigest: "sha256:ab", LabelAddress: `sandbox.app["~pool-1"]`, Owner: "acme",
	}
}

// A field added to a record type must be set in fullRecord, so that the
// fast path is tested on it (and, until it learns it, fails the test
// below rather than making every read slow).
func TestFullRecordSetsEveryField(t *testing.T) {
	rec := fullRecord()
	var check func(v reflect.Value, path string)
	check = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+"."+v.Type().Field(i).Name
			if f.IsZero() {
				t.Errorf("fullRecord leaves %s unset", name)
			}
			if f.Kind() == reflect.Struct && f.Type() != reflect.TypeFor[time.Time]() {
				check(f, name)
			}
		}
	}
	check(reflect.ValueOf(*rec), "Record")
	check(reflect.ValueOf(rec.Credentials["postgres"]), "Credentials")
}

// Whatever decodeCurrent takes, decodeStrict takes and decodes equally;
// what it leaves is left to decodeStrict.
func TestDecodeCurrentAgreesWithStrict(t *testing.T) {
	full, err := encodeRecord(fullRecord())
	if err != nil {
		t.Fatal(err)
	}
	sample, err := encodeRecord(sampleRecord(4))
	if err != nil {
		t.Fatal(err)
	}
	empty, err := encodeRecord(&Record{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
		fast bool // whether the fast path should take it
	}{
		{name: "full", data: string(full), fast: true},
		{name: "sample", data: string(sample), fast: true},
		{name: "zero record", data: string(empty), fast: true},
		{name: "spaced and reordered", data: " {\n \"generation\" : 2 ,\t\"schema_version\":3, \"address\":\"a\" }\r\n", fast: true},
		{name: "nulls", data: `{"schema_version":3,"address":null,"services":null,"features":{"redis":null},"credentials":{"pg":null},"resources":null,"created_at":null,"on_demand":null,"generation":null}`, fast: true},
		{name: "null in a list", data: `{"schema_version":3,"services":["a",null]}`, fast: true},
		{name: "reach and endpoints", data: `{"schema_version":3,"reach":{"networks":["agents","ci"],"publish_address":"0.0.0.0","advertise_host":"db.lan","tls":true},"credentials":{"redis":{"network_host":"sbx-r","network_port":6379,"ca":"-----BEGIN","ca_file":"/x/ca.pem"}}}`, fast: true},
		{name: "empty collections", data: `{"schema_version":3,"services":[],"features":{},"resources":{"containers":{},"volumes":[]}}`, fast: true},
		{name: "escaped map key", data: `{"schema_version":3,"features":{"p\u006fstgres":["x"]}}`, fast: true},
		{name: "invalid UTF-8", data: "{\"schema_version\":3,\"address\":\"a\xffb\"}", fast: true},
		{name: "lone surrogate", data: `{"schema_version":3,"address":"\ud800"}`, fast: true},
		{name: "negative zero", data: `{"schema_version":3,"generation":-0}`, fast: true},
		{name: "min int", data: `{"schema_version":3,"generation":-9223372036854775808}`, fast: true},

		{name: "no version", data: `{"address":"a"}`},
		{name: "old version", data: `{"schema_version":2,"address":"a"}`},
		{name: "future version", data: `{"schema_version":4,"address":"a"}`},
		{name: "version twice", data: `{"schema_version":4,"schema_version":3}`},
		{name: "field twice", data: `{"schema_version":3,"address":"a","address":"b"}`},
		{name: "map key twice", data: `{"schema_version":3,"features":{"a":[],"a":["x"]}}`},
		{name: "map key twice, escaped", data: `{"schema_version":3,"features":{"a":[],"\u0061":["x"]}}`},
		{name: "unknown field", data: `{"schema_version":3,"bogus":1}`},
		{name: "unknown nested field", data: `{"schema_version":3,"resources":{"bogus":1}}`},
		{name: "unknown reach field", data: `{"schema_version":3,"reach":{"bogus":1}}`},
		{name: "reach twice", data: `{"schema_version":3,"reach":{},"reach":{"tls":true}}`},
		{name: "key in another case", data: `{"schema_version":3,"Address":"a"}`},
		{name: "escaped key", data: `{"schema_version":3,"addr\u0065ss":"a"}`},
		{name: "fraction", data: `{"schema_version":3,"generation":1.0}`},
		{name: "exponent", data: `{"schema_version":3,"generation":1e2}`},
		{name: "leading zero", data: `{"schema_version":3,"generation":01}`},
		{name: "overflow", data: `{"schema_version":3,"generation":9223372036854775808}`},
		{name: "string for int", data: `{"schema_version":3,"generation":"1"}`},
		{name: "number for string", data: `{"schema_version":3,"address":1}`},
		{name: "bad time", data: `{"schema_version":3,"created_at":"yesterday"}`},
		{name: "number for time", data: `{"schema_version":3,"created_at":0}`},
		{name: "trailing data", data: `{"schema_version":3} {}`},
		{name: "trailing comma", data: `{"schema_version":3,}`},
		{name: "control character", data: "{\"schema_version\":3,\"address\":\"a\tb\"}"},
		{name: "truncated", data: `{"schema_version":3,"services":["a"`},
		{name: "truncated number", data: `{"schema_version":3,"generation":`},
		{name: "not an object", data: `[1]`},
		{name: "empty", data: ``},
		{name: "misspelled null", data: `{"schema_version":3,"address":nul}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeCurrent([]byte(tt.data), newInterner())
			if ok != tt.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, tt.fast)
			}
			sr, err := decodeStrict([]byte(tt.data))
			if !ok {
				return
			}
			if err != nil || sr.SchemaVersion != SchemaVersion {
				t.Fatalf("fast path took what decodeStrict refuses (version %d, %v)", sr.SchemaVersion, err)
			}
			if diff := cmp.Diff(sr.Record, got); diff != "" {
				t.Errorf("(-strict +fast):\n%s", diff)
			}
		})
	}
}

// Same rule, on whatever the fuzzer makes of valid records.
func FuzzDecodeCurrent(f *testing.F) {
	for _, rec := range []*Record{fullRecord(), sampleRecord(1), sampleRecord(2), {}} {
		data, err := encodeRecord(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"schema_version":3,"features":{"redis":null},"generation":-0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodeCurrent(data, newInterner())
		if !ok {
			return
		}
		sr, err := decodeStrict(data)
		if err != nil || sr.SchemaVersion != SchemaVersion {
			t.Fatalf("fast path took what decodeStrict refuses (version %d, %v)", sr.SchemaVersion, err)
		}
		if diff := cmp.Diff(sr.Record, got); diff != "" {
			t.Errorf("(-strict +fast):\n%s", diff)
		}
	})
}

// Every record this build writes takes the fast path.
func TestEncodedRecordsTakeFastPath(t *testing.T) {
	for i := range 5 {
		data, err := encodeRecord(sampleRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := decodeCurrent(data, nil); !ok {
			t.Errorf("record %d: %s", i, strings.TrimSpace(string(data)))
		}
	}
}

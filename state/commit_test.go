package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Concurrent writes on one Store share transactions (commit.go): every
// change lands exactly once, the serial counts each, and a change that
// fails (here: overwriting a record from a newer sandboxer) gets its own
// error while the ones beside it commit.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path, sampleRecord(1))
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSandboxes).Put([]byte(sampleRecord(1).Address),
			[]byte(fmt.Sprintf(`{"schema_version":%d,"address":"%s"}`, SchemaVersion+1, sampleRecord(1).Address)))
	})
	s := Open(path)
	before, err := s.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make([]error, n+2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 2; i < n+2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.Put(ctx, sampleRecord(i))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		errs[1] = s.Put(ctx, sampleRecord(1))
	}()
	close(start)
	wg.Wait()
	var fe *FutureSchemaError
	if !errors.As(errs[1], &fe) {
		t.Fatalf("overwriting the newer record: %v, want a *FutureSchemaError", errs[1])
	}
	for i := 2; i < n+2; i++ {
		if errs[i] != nil {
			t.Fatalf("put %d: %v", i, errs[i])
		}
	}
	after, err := s.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Serial != before.Serial+n {
		t.Errorf("serial %d after %d changes from %d", after.Serial, n, before.Serial)
	}
	for i := 2; i < n+2; i++ {
		if after.Records[sampleRecord(i).Address] == nil {
			t.Errorf("record %d missing", i)
		}
	}
	if _, ok := after.Damaged[sampleRecord(1).Address]; !ok {
		t.Errorf("the newer record was overwritten")
	}
}

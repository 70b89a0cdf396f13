package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

const committerEnv = "SANDBOXER_STATE_TEST_COMMITTER"

// TestCommitterProcess is not a test: it is a child of
// TestGroupCommitAcrossProcesses. Its goroutines put records
// sandbox.p<ID>[i] on the state file in the environment, and it prints
// each record's index once its Put has returned nil.
func TestCommitterProcess(t *testing.T) {
	env := os.Getenv(committerEnv) // "path|id|records"
	if env == "" {
		return
	}
	parts := strings.Split(env, "|")
	n, _ := strconv.Atoi(parts[2])
	s := Open(parts[0])
	var mu sync.Mutex
	var wg sync.WaitGroup
	fails := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := sampleRecord(i)
			rec.Address = fmt.Sprintf("sandbox.p%s[%d]", parts[1], i)
			err := s.Put(context.Background(), rec)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Println("error:", err)
				fails++
				return
			}
			fmt.Println(i)
		}()
	}
	wg.Wait()
	if fails > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}

// Several processes put on one state file at once, each with many
// goroutines (so each process groups its changes), and one of them is
// killed with SIGKILL midway. Every Put a survivor saw succeed is in the
// file, the serial moved once per record present, and the file opens
// and writes afterwards: a dead writer loses at most its own
// unacknowledged changes.
func TestGroupCommitAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	newState(t, path)
	before, err := Open(path).Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const procs, perProc = 4, 60
	type child struct {
		cmd  *exec.Cmd
		out  *bufio.Scanner
		done []int
	}
	children := make([]*child, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCommitterProcess$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d", committerEnv, path, p, perProc))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		children[p] = &child{cmd: cmd, out: bufio.NewScanner(out)}
	}
	// Kill the first child once it has committed a few changes.
	victim := children[0]
	for victim.out.Scan() {
		if i, err := strconv.Atoi(victim.out.Text()); err == nil {
			victim.done = append(victim.done, i)
		}
		if len(victim.done) == 3 {
			break
		}
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Wait()
	for p, c := range children[1:] {
		for c.out.Scan() {
			i, err := strconv.Atoi(c.out.Text())
			if err != nil {
				t.Errorf("child %d: %s", p+1, c.out.Text())
				continue
			}
			c.done = append(c.done, i)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", p+1, err)
		}
		if len(c.done) != perProc {
			t.Errorf("child %d committed %d of %d", p+1, len(c.done), perProc)
		}
	}
	s := Open(path)
	after, err := s.Inspect(ctx)
	if err != nil {
		t.Fatalf("the state after a writer was killed: %v", err)
	}
	for p, c := range children {
		for _, i := range c.done {
			if after.Records[fmt.Sprintf("sandbox.p%d[%d]", p, i)] == nil {
				t.Errorf("sandbox.p%d[%d] was acknowledged and is missing", p, i)
			}
		}
	}
	present := len(after.Records) - len(before.Records)
	if want := before.Serial + uint64(present); after.Serial != want {
		t.Errorf("serial %d with %d new records from serial %d, want %d", after.Serial, present, before.Serial, want)
	}
	if present < (procs-1)*perProc+3 {
		t.Errorf("%d new records, want at least %d", present, (procs-1)*perProc+3)
	}
	if err := s.Put(ctx, sampleRecord(999)); err != nil {
		t.Fatalf("a write after the kill: %v", err)
	}
}

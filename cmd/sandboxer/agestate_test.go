package main

import (
	"context"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/state"
)

// cmdAgeState moves a recorded instance's expiry into the past, so
// scenarios can test expiry without waiting out a ttl (ttls are at least
// a minute):
//
//	agestate STATEFILE ADDR
func cmdAgeState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: agestate STATEFILE ADDR")
	}
	ctx := context.Background()
	st := state.Open(ts.MkAbs(args[0]))
	rec, err := st.Get(ctx, args[1])
	ts.Check(err)
	if rec == nil {
		ts.Fatalf("no record %s in %s", args[1], args[0])
	}
	rec.ExpiresAt = time.Now().UTC().Add(-time.Second)
	ts.Check(st.Put(ctx, rec))
}

package main

import (
	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"
)

// stateCmds are the testscript commands of the damaged-state scenarios.
func stateCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"damagerecord": cmdDamageRecord,
	}
}

// cmdDamageRecord stores a record sandboxer cannot read, bypassing the
// state package, as a disk error or a newer sandboxer would leave it:
//
//	damagerecord STATEFILE ADDR json|future
//
// json: bytes that are not JSON; future: a record of schema version 99.
func cmdDamageRecord(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: damagerecord STATEFILE ADDR json|future")
	}
	var data string
	switch args[2] {
	case "json":
		data = `{"schema_version":1,"address":"` + args[1] + `","services":[`
	case "future":
		data = `{"schema_version":99,"address":"` + args[1] + `","hologram":true}`
	default:
		ts.Fatalf("damagerecord: unknown damage %q", args[2])
	}
	db, err := bolt.Open(ts.MkAbs(args[0]), 0o600, nil)
	ts.Check(err)
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("sandboxes"))
		if b == nil {
			ts.Fatalf("damagerecord: %s has no sandboxes bucket", args[0])
		}
		return b.Put([]byte(args[1]), []byte(data))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	ts.Check(err)
}

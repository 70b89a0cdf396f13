package main

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdCapsClaim makes the image-inspection cache claim that a service's
// image provides a feature it does not, so a scenario can reach a failure
// at create time that the plan-time check would otherwise catch (as if
// the inspection had been wrong). The cache must hold an inspection of
// the service's image already.
//
//	capsclaim CACHEDIR SERVICE FEATURE
func cmdCapsClaim(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: capsclaim CACHEDIR SERVICE FEATURE")
	}
	files, err := filepath.Glob(filepath.Join(ts.MkAbs(args[0]), args[1]+"-*.json"))
	ts.Check(err)
	if len(files) == 0 {
		ts.Fatalf("capsclaim: no cached inspection of a %s image in %s", args[1], args[0])
	}
	for _, f := range files {
		var entry map[string]any
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(f)), &entry))
		feats, _ := entry["features"].(map[string]any)
		if feats == nil {
			ts.Fatalf("capsclaim: %s has no features", f)
		}
		feats[args[2]] = "0.0.0-claimed"
		b, err := json.Marshal(entry)
		ts.Check(err)
		ts.Check(os.WriteFile(f, b, 0o600))
	}
}

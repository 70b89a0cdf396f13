package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile starts a CPU profile of the whole command into the file
// SANDBOXER_CPUPROFILE names, for `go tool pprof`; the returned function
// stops it. It is an environment variable rather than a flag so that it
// covers every command, including flag parsing, and shows in no help text.
// A profile that cannot start is a warning: the command still runs.
func startProfile(f *Factory) (stop func()) {
	path := f.Getenv("SANDBOXER_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	out, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(out)
		if err != nil {
			out.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(f.IO.Err, "Warning: SANDBOXER_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := out.Close(); err != nil {
			fmt.Fprintf(f.IO.Err, "Warning: SANDBOXER_CPUPROFILE: %v\n", err)
		}
	}
}

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
)

// ReapOptions are the flags of `sandboxer reap`.
type ReapOptions struct {
	f        *Factory
	OnDemand OnDemandOptions
	JSON     bool
}

func newReapCmd(f *Factory, runF func(*ReapOptions) error) *cobra.Command {
	opts := &ReapOptions{f: f}
	cmd := &cobra.Command{
		Use:   "reap",
		Short: "Destroy expired sandboxes and remove orphaned containers",
		Long: "Destroy every sandbox past its ttl (on-demand and declared ones) and remove\n" +
			"resources labelled with this state's lineage that no state record owns (left\n" +
			"by a crash between creating them and recording them, or an old generation\n" +
			"whose removal failed). Safe while other commands run: it never waits for a\n" +
			"lock, and skips any sandbox another command is working on; declared sandboxes\n" +
			"are skipped while a plan or apply holds the state lock. It also drops the\n" +
			"per-test databases (sandboxertest.Database, POST /v1/databases) whose lease\n" +
			"passed or whose test process on this machine is gone.",
		Example: "  sandboxer reap\n" +
			"  sandboxer reap --json | jq '.expired'",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return reapRun(cmd, opts)
		},
	}
	opts.OnDemand.bind(cmd.Flags(), 0)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print what was done as JSON")
	return cmd
}

func reapRun(cmd *cobra.Command, opts *ReapOptions) error {
	f := opts.f
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	rep, err := s.lib.Reap(f.hard)
	if opts.JSON {
		if jerr := reapJSON(f.IO.Out, rep); jerr != nil {
			return jerr
		}
	} else {
		printReap(f.IO.Out, rep, err == nil)
	}
	for _, d := range rep.Damaged {
		fmt.Fprintf(f.IO.Err, "Warning: %s: left alone, its state record cannot be read: %v\n", d.Address, d.Err)
	}
	// The per-test databases of dead test processes and passed leases.
	for _, host := range slices.Sorted(maps.Keys(rep.Databases)) {
		fmt.Fprintf(f.IO.Err, "%s: dropped %d database(s) of tests that ended without dropping them: %s\n",
			host, len(rep.Databases[host]), strings.Join(rep.Databases[host], ", "))
	}
	return err
}

type reapDoc struct {
	Expired []string       `json:"expired"`
	Unheld  []string       `json:"unheld,omitempty"`
	Orphans []reapResource `json:"orphans"`
	Skipped []reapSkip     `json:"skipped"`
	Damaged []reapDamaged  `json:"damaged"`
	// Templates are the unused template data directories removed.
	Templates []reapResource `json:"templates,omitempty"`
	// Databases are the per-test databases dropped, by host address.
	Databases map[string][]string `json:"databases,omitempty"`
}

// reapDamaged is a record reap could not read, and so left alone.
type reapDamaged struct {
	Address string `json:"address"`
	Error   string `json:"error"`
}

type reapResource struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Address    string `json:"address"`
	Generation int    `json:"generation"`
}

type reapSkip struct {
	Address string `json:"address"`
	Reason  string `json:"reason"`
}

func reapJSON(w io.Writer, rep *sandboxer.ReapReport) error {
	doc := reapDoc{Expired: append([]string{}, rep.Expired...), Unheld: rep.Unheld, Orphans: []reapResource{}, Skipped: []reapSkip{}, Damaged: []reapDamaged{}, Databases: rep.Databases}
	for _, o := range rep.Orphans {
		doc.Orphans = append(doc.Orphans, reapResource{o.Kind, o.Name, o.Address, o.Generation})
	}
	for _, o := range rep.Templates {
		doc.Templates = append(doc.Templates, reapResource{o.Kind, o.Name, o.Address, o.Generation})
	}
	for _, s := range rep.Skipped {
		doc.Skipped = append(doc.Skipped, reapSkip{s.Address, s.Why})
	}
	for _, d := range rep.Damaged {
		doc.Damaged = append(doc.Damaged, reapDamaged{d.Address, d.Err.Error()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// printReap writes one line per address, then, when the pass ended
// without an error (complete), a summary: the error that follows a pass
// that did not is never preceded by a success line.
func printReap(w io.Writer, rep *sandboxer.ReapReport, complete bool) {
	for _, a := range rep.Expired {
		fmt.Fprintf(w, "%s: destroyed (its ttl has expired)\n", a)
	}
	for _, a := range rep.Unheld {
		fmt.Fprintf(w, "%s: released (every session that held it is gone)\n", a)
	}
	byAddr := map[string]int{}
	for _, o := range rep.Orphans {
		byAddr[o.Address]++
	}
	addrs := make([]string, 0, len(byAddr))
	for a := range byAddr {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		name := a
		if name == "" {
			name = "(no address label)"
		}
		fmt.Fprintf(w, "%s: removed %d orphaned resource(s) no state record owns\n", name, byAddr[a])
	}
	if n := len(rep.Templates); n > 0 {
		fmt.Fprintf(w, "removed %d template data director(y/ies) no configured image uses\n", n)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "%s: skipped, %s; the next reap retries\n", s.Address, s.Why)
	}
	for _, d := range rep.Damaged {
		fmt.Fprintf(w, "%s: left alone, its state record cannot be read (see the warning)\n", d.Address)
	}
	if !complete {
		return
	}
	fmt.Fprintf(w, "Reap complete: %d expired sandbox(es) destroyed, %d orphaned resource(s) removed, %d skipped",
		len(rep.Expired), len(rep.Orphans), len(rep.Skipped))
	if len(rep.Damaged) > 0 {
		fmt.Fprintf(w, ", %d damaged record(s) left alone", len(rep.Damaged))
	}
	fmt.Fprintln(w, ".")
}

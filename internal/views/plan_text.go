package views

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// PlanText renders a plan the way SPEC §5 shows it: one entry per instance
// with its action and why, then a summary line.
func PlanText(out io.Writer, p *plan.Plan, c Colorizer) {
	if len(p.Changes) == 0 && len(p.Pools) == 0 {
		fmt.Fprintln(out, "No sandboxes are declared or recorded: nothing to do.")
		return
	}
	// A plan is a few lines per instance; unbuffered on a terminal or a
	// pipe that is a write(2) per line.
	w := bufio.NewWriter(out)
	defer w.Flush()
	for _, ch := range p.Changes {
		fmt.Fprintf(w, "  %s\n", c.Bold("# "+Headline(ch)))
		if ch.PrevAddr != "" {
			fmt.Fprintf(w, "  # (moved from %s)\n", ch.PrevAddr)
		}
		for _, line := range bodyLines(ch, c) {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintln(w)
	}
	for _, ps := range p.Pools {
		fmt.Fprintf(w, "  %s\n\n", c.Bold(PoolLine(ps)))
	}
	line := SummaryLine(p.Summary())
	if n := p.Moves(); n > 0 {
		line = strings.TrimSuffix(line, ".") + fmt.Sprintf(", %d moved.", n)
	}
	if n := p.Summary().Forget; n > 0 {
		line = strings.TrimSuffix(line, ".") + fmt.Sprintf(", %d forgotten.", n)
	}
	fmt.Fprintln(w, c.Bold(line))
}

// PoolLine is a warm pool's line in a plan.
func PoolLine(ps plan.PoolSummary) string {
	line := fmt.Sprintf("# %s keeps a warm pool: %d of %d members ready", ps.Address, ps.Ready, ps.Size)
	if ps.Ready < ps.Size {
		line += " (serve or sandboxer pool fill tops it up)"
	}
	return line
}

// SummaryLine is the closing "Plan: …" line.
func SummaryLine(s plan.Summary) string {
	return fmt.Sprintf("Plan: %d to create, %d to replace, %d to destroy, %d reused.",
		s.Create, s.Replace, s.Delete, s.Reuse)
}

// Headline says what happens to the instance and why, in one sentence.
func Headline(ch *plan.Change) string {
	addr := ch.Addr.String()
	switch ch.Action {
	case plan.NoOp:
		return fmt.Sprintf("%s is cached and will be reused (%s covers %s)",
			addr, setText(ch.Before.Features), setText(ch.Requested))
	case plan.Create:
		if ch.Reason == plan.ReasonDead {
			detail := ""
			if ch.Detail != "" {
				detail = " (" + ch.Detail + ")"
			}
			return fmt.Sprintf("%s will be created: the cached sandbox is dead%s; credentials will rotate", addr, detail)
		}
		if ch.After != nil && ch.After.Runtime != "" {
			return addr + " will be created on " + ch.After.Runtime
		}
		return addr + " will be created"
	case plan.CreateThenDelete:
		carried := ""
		if ch.CarryData {
			carried = "; data carried"
		}
		return fmt.Sprintf("%s must be replaced: %s; credentials will rotate%s", addr, replaceWhy(ch), carried)
	case plan.Forget:
		return addr + " will be forgotten: a removed block takes it out of the state without destroying it; its containers and data keep running, unmanaged"
	case plan.Delete:
		switch ch.Reason {
		case plan.ReasonRemoved:
			return addr + " will be destroyed: a removed block says so"
		case plan.ReasonNoConfig:
			return addr + " will be destroyed: it is no longer in the configuration"
		case plan.ReasonExpired:
			return addr + " will be destroyed: its TTL has expired"
		}
		return addr + " will be destroyed"
	}
	return addr
}

func replaceWhy(ch *plan.Change) string {
	switch ch.Reason {
	case plan.ReasonServiceSuperset:
		return listPhrase("service", "services", ch.MissingServices) + notProvisioned(len(ch.MissingServices))
	case plan.ReasonFeatureSuperset:
		var parts []string
		for _, svc := range ch.MissingFeatures.Services() {
			f := ch.MissingFeatures[svc]
			parts = append(parts, svc+" "+listPhrase("feature", "features", f)+notProvisioned(len(f)))
		}
		return strings.Join(parts, "; ")
	case plan.ReasonExpired:
		return "its TTL has expired"
	case plan.ReasonReplaceByRequest:
		return "replacement was requested with --replace"
	case plan.ReasonNetworkSuperset:
		return listPhrase("network", "networks", ch.MissingNetworks) + notJoined(len(ch.MissingNetworks))
	case plan.ReasonExposureChanged:
		return fmt.Sprintf("it is %s, the configuration asks for %s", exposureText(ch.Before), exposureText(ch.After))
	case plan.ReasonDatabaseChanged:
		return fmt.Sprintf("postgres database %q is now named %q", ch.PriorDatabase, databaseName(ch.Database))
	case plan.ReasonSeedChanged:
		return "its seed data changed"
	case plan.ReasonRuntimeChanged:
		return fmt.Sprintf("it runs on %s, the configuration puts it on %s", ch.Before.RuntimeName(), ch.After.RuntimeName())
	}
	return string(ch.Reason)
}

func listPhrase(one, many string, items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	if len(items) == 1 {
		return one + " " + q[0]
	}
	return many + " " + strings.Join(q, ", ")
}

func notProvisioned(n int) string {
	if n == 1 {
		return " is not provisioned"
	}
	return " are not provisioned"
}

// blockName renders `sandbox "ci"` or `sandbox "m" ["k"]`.
func blockName(a config.Address) string {
	s := "sandbox " + strconv.Quote(a.Name)
	if a.HasKey {
		s += " [" + strconv.Quote(a.Key) + "]"
	}
	return s
}

func bodyLines(ch *plan.Change, c Colorizer) []string {
	name := blockName(ch.Addr)
	switch ch.Action {
	case plan.NoOp:
		return []string{"  = " + name}
	case plan.Delete:
		return []string{c.Red("  - ") + name}
	case plan.Forget:
		return []string{"  . " + name}
	case plan.Create:
		lines := []string{c.Green("  + ") + name + " {"}
		w := width(ch.After.Features.Services())
		for _, svc := range ch.After.Features.Services() {
			lines = append(lines, fmt.Sprintf("      %s %-*s = %s", c.Green("+"), w, svc, listText(ch.After.Features[svc])))
		}
		lines = append(lines, reachCreateLines(ch.After, c)...)
		return append(append(append(lines, imagesLine(ch.After)...), generationsLine(ch.After)...), "    }")
	case plan.CreateThenDelete:
		lines := []string{c.Red("-/") + c.Green("+") + " " + name + " {"}
		svcs := ch.After.Features.Services()
		w := max(width(svcs), len("credentials"))
		for _, svc := range svcs {
			after := ch.After.Features[svc]
			before, had := ch.Before.Features[svc]
			switch {
			case !had:
				lines = append(lines, fmt.Sprintf("      %s %-*s = %s %s", c.Green("+"), w, svc, listText(after), c.Red("# forces replacement")))
			case listText(before) != listText(after):
				lines = append(lines, fmt.Sprintf("      %s %-*s = %s -> %s %s", c.Yellow("~"), w, svc, listText(before), listText(after), c.Red("# forces replacement")))
			}
		}
		lines = append(lines, reachReplaceLines(ch.Before, ch.After, w, c)...)
		if ch.PriorDatabase != "" && ch.PriorDatabase != databaseName(ch.Database) {
			lines = append(lines, fmt.Sprintf("      %s %-*s = %q -> %q %s", c.Yellow("~"), w, "database", ch.PriorDatabase, databaseName(ch.Database), c.Red("# forces replacement")))
		}
		if ch.PriorSeedDigest != ch.SeedDigest {
			lines = append(lines, fmt.Sprintf("      %s %-*s = %s -> %s %s", c.Yellow("~"), w, "seed", seedText(ch.PriorSeedDigest), seedText(ch.SeedDigest), c.Red("# forces replacement")))
		}
		if ch.CarryData {
			lines = append(lines, fmt.Sprintf("      %s %-*s = (carried)", c.Yellow("~"), w, "data"))
		}
		lines = append(lines, fmt.Sprintf("      %s %-*s = (sensitive) -> (rotated)", c.Yellow("~"), w, "credentials"))
		return append(append(append(lines, imagesLine(ch.After)...), generationsLine(ch.After)...), "    }")
	}
	return nil
}

// imagesLine says which image each service of a create or replace runs,
// as a comment: it is what the plan chose (configured, or the default
// image for the features), not something that changes on its own.
func imagesLine(after *plan.Sandbox) []string {
	if after == nil || len(after.Images) == 0 {
		return nil
	}
	var parts []string
	for _, svc := range after.Features.Services() {
		if ref, ok := after.Images[svc]; ok {
			parts = append(parts, fmt.Sprintf("%s %q", svc, ref))
		}
	}
	return []string{"      # images: " + strings.Join(parts, ", ")}
}

// generationsLine says, as a comment, the API generation of each feature
// that has one on the image the plan chose ("redis search 1" for
// RediSearch 1.2), as the preflight found it; nothing when it did not
// look (--refresh=false) or no feature has one.
func generationsLine(after *plan.Sandbox) []string {
	if after == nil || len(after.Generations) == 0 {
		return nil
	}
	var parts []string
	for _, svc := range after.Features.Services() {
		gens := after.Generations[svc]
		names := make([]string, 0, len(gens))
		for f := range gens {
			names = append(names, f)
		}
		slices.Sort(names)
		for _, f := range names {
			parts = append(parts, fmt.Sprintf("%s %s %s", svc, f, gens[f]))
		}
	}
	return []string{"      # API generations: " + strings.Join(parts, ", ")}
}

// seedText shortens a seed digest for the diff: "sha256:1a2b3c4d…", or
// "none".
func seedText(d string) string {
	if d == "" {
		return "none"
	}
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// databaseName is the database a change provisions.
func databaseName(db string) string {
	if db == "" {
		return config.DefaultDatabase
	}
	return db
}

func width(names []string) int {
	w := 0
	for _, n := range names {
		w = max(w, len(n))
	}
	return w
}

// listText renders a feature list as HCL would: ["a", "b"].
func listText(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// setText renders a feature set compactly: postgres[pg_trgm,vector] redis[].
func setText(f config.FeatureSet) string {
	if len(f) == 0 {
		return "nothing"
	}
	return f.String()
}

package views

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/sandboxer/sandboxer/plan"
)

// exposureText says where a sandbox's ports are published, e.g.
// "published on 0.0.0.0 with TLS".
func exposureText(s *plan.Sandbox) string {
	if s == nil {
		return "not provisioned"
	}
	return s.Publish().String()
}

func notJoined(n int) string {
	if n == 1 {
		return " is not joined"
	}
	return " are not joined"
}

// reachCreateLines show a new sandbox's user networks and, when not the
// default loopback, its exposure.
func reachCreateLines(after *plan.Sandbox, c Colorizer) []string {
	var lines []string
	if len(after.Networks) > 0 {
		lines = append(lines, fmt.Sprintf("      %s networks = %s", c.Green("+"), listText(after.Networks)))
	}
	if after.Exposure != nil {
		lines = append(lines, fmt.Sprintf("      %s exposure = %s", c.Green("+"), strconv.Quote(after.Publish().String())))
	}
	return lines
}

// reachReplaceLines show what changes in networks and exposure; either
// forces the replacement when it is what changed.
func reachReplaceLines(before, after *plan.Sandbox, w int, c Colorizer) []string {
	var lines []string
	if !slices.Equal(before.Networks, after.Networks) {
		lines = append(lines, fmt.Sprintf("      %s %-*s = %s -> %s %s", c.Yellow("~"), w, "networks",
			listText(before.Networks), listText(after.Networks), c.Red("# forces replacement")))
	}
	if b, a := before.Publish(), after.Publish(); b != a {
		lines = append(lines, fmt.Sprintf("      %s %-*s = %s -> %s %s", c.Yellow("~"), w, "exposure",
			strconv.Quote(b.String()), strconv.Quote(a.String()), c.Red("# forces replacement")))
	} else if after.Exposure != nil {
		lines = append(lines, fmt.Sprintf("        %-*s = %s", w, "exposure", strconv.Quote(a.String())))
	}
	return lines
}

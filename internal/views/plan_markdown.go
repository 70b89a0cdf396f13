package views

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxer/sandboxer/plan"
)

// PlanMarkdown renders a plan for a pull-request comment: a summary
// heading, a table with one row per instance, and the full text plan in a
// collapsible diff block.
func PlanMarkdown(out io.Writer, p *plan.Plan) {
	w := bufio.NewWriter(out) // a row per instance: one write, not one each
	defer w.Flush()
	fmt.Fprintf(w, "### sandboxer plan\n\n**%s**\n\n", SummaryLine(p.Summary()))
	if len(p.Changes) == 0 {
		fmt.Fprintln(w, "No sandboxes are declared or recorded.")
		return
	}
	fmt.Fprintln(w, "| | Sandbox | Action | Reason |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, ch := range p.Changes {
		fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", wordsFor(ch.Action).mark, ch.Addr.String(),
			wordsFor(ch.Action).word, mdEscape(reasonText(ch)))
	}
	var body bytes.Buffer
	PlanText(&body, p, Colorizer{})
	fmt.Fprintf(w, "\n<details><summary>Full plan</summary>\n\n```diff\n%s```\n\n</details>\n", diffify(body.String()))
}

// reasonText is the part of the headline after the address.
func reasonText(ch *plan.Change) string {
	h := Headline(ch)
	return strings.TrimPrefix(h, ch.Addr.String()+" ")
}

// diffify moves each line's change marker to column one so GitHub's diff
// highlighting colours added, removed and replaced lines.
func diffify(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimLeft(line, " ")
		switch {
		case strings.HasPrefix(t, "-/+"):
			out = append(out, "!"+line)
		case strings.HasPrefix(t, "+ "):
			out = append(out, "+"+line)
		case strings.HasPrefix(t, "- "):
			out = append(out, "-"+line)
		case strings.HasPrefix(t, "~ "):
			out = append(out, "!"+line)
		default:
			out = append(out, " "+line)
		}
	}
	return strings.TrimRight(strings.Join(out, "\n"), " ")
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}

package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// writePlanJSON writes what a json.Encoder with SetIndent("", "  ") writes
// for NewJSONPlan(p, version), byte for byte, as it goes: encoding the
// whole value by reflection and then indenting it was a tenth of a plan
// of 1,000 sandboxes. Anything rare (an exposure, a string that needs
// escaping) is handed to encoding/json itself.
func writePlanJSON(w io.Writer, p *plan.Plan, version string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	jw := &jsonWriter{w: bw}
	jw.raw("{\n  \"format_version\": \"1.0\",\n  \"sandboxer_version\": ")
	jw.str(version)
	jw.raw(",\n  \"resource_changes\": ")
	if len(p.Changes) == 0 {
		jw.raw("[]")
	} else {
		jw.raw("[")
		jw.changes(p.Changes)
		jw.raw("\n  ]")
	}
	jw.raw(",\n  \"planned_values\": ")
	jw.values(p.Changes, true, "\n  ")
	if slices.ContainsFunc(p.Changes, func(ch *plan.Change) bool { return ch.Before != nil }) {
		jw.raw(",\n  \"prior_state\": {\n    \"format_version\": \"1.0\",\n    \"values\": ")
		jw.values(p.Changes, false, "\n    ")
		jw.raw("\n  }")
	}
	jw.raw(",\n  \"configuration\": ")
	jw.marshal(configuration(p), "  ")
	if len(p.Checks) > 0 {
		jw.raw(",\n  \"checks\": ")
		jw.marshal(checksJSON(p.Checks), "  ")
	}
	s := p.Summary()
	jw.raw(",\n  \"summary\": {\n    \"create\": ")
	jw.int(s.Create)
	jw.raw(",\n    \"replace\": ")
	jw.int(s.Replace)
	jw.raw(",\n    \"delete\": ")
	jw.int(s.Delete)
	jw.raw(",\n    \"reuse\": ")
	jw.int(s.Reuse)
	jw.raw("\n  }")
	if len(p.Pools) > 0 {
		jw.raw(",\n  \"pools\": ")
		jw.marshal(p.Pools, "  ")
	}
	jw.raw(",\n  \"errored\": false\n}\n")
	if jw.err != nil {
		return jw.err
	}
	return bw.Flush()
}

// minRenderPieces is how many changes a plan needs before they are
// rendered on every core: below it a second thread's allocations cost
// more memory than the milliseconds it saves are worth.
const minRenderPieces = 2048

// changes writes the resource_changes entries, comma-separated. A large
// plan's are rendered in pieces on every core: the first straight to the
// output, the others each into a buffer of its own, written after it in
// order. The bytes are the same.
func (j *jsonWriter) changes(cs []*plan.Change) {
	workers := runtime.GOMAXPROCS(0)
	if len(cs) < minRenderPieces || workers < 2 {
		j.changeList(cs, false)
		return
	}
	size := (len(cs) + workers - 1) / workers
	rest := make([]bytes.Buffer, (len(cs)-1)/size)
	var wg sync.WaitGroup
	for k := range rest {
		lo, hi := (k+1)*size, min((k+2)*size, len(cs))
		wg.Go(func() { (&jsonWriter{w: &rest[k]}).changeList(cs[lo:hi], true) })
	}
	j.changeList(cs[:size], false)
	wg.Wait()
	for k := range rest {
		if j.err == nil {
			_, j.err = rest[k].WriteTo(j.w)
		}
	}
}

// changeList writes entries; continued says entries precede them.
func (j *jsonWriter) changeList(cs []*plan.Change, continued bool) {
	for i, ch := range cs {
		if i > 0 || continued {
			j.raw(",")
		}
		j.change(ch)
	}
}

// jsonWriter keeps the first error; later writes are no-ops.
type jsonWriter struct {
	w   jsonSink
	err error
	num []byte
}

// jsonSink is a bufio.Writer, or a piece's bytes.Buffer.
type jsonSink interface {
	io.Writer
	io.StringWriter
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

func (j *jsonWriter) int(n int) {
	j.num = strconv.AppendInt(j.num[:0], int64(n), 10)
	if j.err == nil {
		_, j.err = j.w.Write(j.num)
	}
}

// str writes s as encoding/json does (HTML-safe escaping on).
func (j *jsonWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j.marshal(s, "")
			return
		}
	}
	j.raw(`"`)
	j.raw(s)
	j.raw(`"`)
}

// marshal writes v as an Encoder with that indentation would, at a place
// indented by prefix.
func (j *jsonWriter) marshal(v any, prefix string) {
	if j.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		j.err = err
		return
	}
	_, j.err = j.w.Write(b)
}

// change writes one resource_changes entry, indented as the array's item.
func (j *jsonWriter) change(ch *plan.Change) {
	reason := ch.Reason
	if reason == plan.ReasonNone {
		reason = plan.ReasonNoConfig // as NewJSONPlan
	}
	j.raw("\n    {\n      \"address\": ")
	j.str(ch.Addr.String())
	if ch.PrevAddr != "" {
		j.raw(",\n      \"previous_address\": ")
		j.str(ch.PrevAddr)
	}
	j.raw(",\n      \"mode\": \"managed\",\n      \"type\": \"sandbox\",\n      \"name\": ")
	j.str(ch.Addr.Name)
	j.raw(",\n      \"index\": ")
	if ch.Addr.HasKey {
		j.str(ch.Addr.Key)
	} else {
		j.raw("null")
	}
	j.raw(",\n      \"provider_name\": ")
	j.str(providerName(changeRuntime(ch)))
	if ch.Project != "" {
		j.raw(",\n      \"project\": ")
		j.str(ch.Project)
	}
	j.raw(",\n      \"change\": {\n        \"actions\": [")
	for i, a := range actions(ch.Action) {
		if i > 0 {
			j.raw(",")
		}
		j.raw("\n          ")
		j.str(a)
	}
	const in = "\n          " // the fields of before and after
	j.raw("\n        ],\n        \"before\": ")
	j.sandbox(ch.Before, 0, in)
	j.raw(",\n        \"after\": ")
	j.sandbox(ch.After, ttlSeconds(ch), in)
	j.raw(",\n        \"after_unknown\": ")
	j.mask(afterUnknown(ch), in)
	j.raw(",\n        \"before_sensitive\": ")
	j.mask(sensitive(ch.Before), in)
	j.raw(",\n        \"after_sensitive\": ")
	j.mask(sensitive(ch.After), in)
	j.raw("\n      },\n      \"action_reason\": ")
	j.str(string(reason))
	if ch.CarryData {
		j.raw(",\n      \"data_carried\": true")
	}
	j.raw("\n    }")
}

// ttlSeconds is the ttl_seconds of a change's after (attributes).
func ttlSeconds(ch *plan.Change) int64 {
	if ch.After == nil {
		return 0
	}
	return int64(ch.TTL.Seconds())
}

// mask writes a Terraform mask whose fields are indented by in.
func (j *jsonWriter) mask(m JSONMask, in string) {
	switch {
	case !m.Object:
		j.raw("false")
	case m.Credentials:
		j.raw("{" + in + "\"credentials\": true" + in[:len(in)-2] + "}")
	default:
		j.raw("{}")
	}
}

// values writes Terraform's values representation of the changes' afters
// (planned) or befores, the object's opening brace on a line indented
// by in.
func (j *jsonWriter) values(cs []*plan.Change, planned bool, in string) {
	first := true
	for _, ch := range cs {
		sb := ch.Before
		if planned {
			sb = ch.After
		}
		if sb == nil {
			continue
		}
		if first {
			j.raw("{" + in + "  \"root_module\": {" + in + "    \"resources\": [")
			first = false
		} else {
			j.raw(",")
		}
		r := in + "        " // the resource's fields
		j.raw(in + "      {" + r + "\"address\": ")
		j.str(ch.Addr.String())
		j.raw("," + r + "\"mode\": \"managed\"," + r + "\"type\": \"sandbox\"," + r + "\"name\": ")
		j.str(ch.Addr.Name)
		if ch.Addr.HasKey {
			j.raw("," + r + "\"index\": ")
			j.str(ch.Addr.Key)
		}
		j.raw("," + r + "\"provider_name\": ")
		j.str(providerName(changeRuntime(ch)))
		j.raw("," + r + "\"schema_version\": 0," + r + "\"values\": ")
		var ttl int64
		if planned {
			ttl = ttlSeconds(ch)
		}
		j.sandbox(sb, ttl, r+"  ")
		j.raw("," + r + "\"sensitive_values\": ")
		j.mask(sensitive(sb), r+"  ")
		j.raw(in + "      }")
	}
	if first {
		j.raw("{" + in + "  \"root_module\": {}" + in + "}")
		return
	}
	j.raw(in + "    ]" + in + "  }" + in + "}")
}

// sandbox writes a before or after shape (attributes) whose fields are
// indented by in.
func (j *jsonWriter) sandbox(sb *plan.Sandbox, ttl int64, in string) {
	if sb == nil {
		j.raw("null")
		return
	}
	j.raw("{" + in + "\"services\": ")
	j.strings(sb.Services, in)
	j.raw("," + in + "\"features\": ")
	j.features(sb.Features, in)
	if len(sb.Networks) > 0 {
		j.raw("," + in + "\"networks\": ")
		j.strings(sb.Networks, in)
	}
	if sb.Exposure != nil {
		j.raw("," + in + "\"exposure\": ")
		j.marshal(sb.Exposure, in[1:])
	}
	if len(sb.Images) > 0 {
		j.raw("," + in + "\"images\": ")
		j.stringMap(sb.Images, in)
	}
	if len(sb.Generations) > 0 {
		j.raw("," + in + "\"generations\": ")
		j.marshal(sb.Generations, in[1:])
	}
	if sb.Runtime != "" {
		j.raw("," + in + "\"runtime\": ")
		j.str(sb.Runtime)
	}
	if ttl != 0 {
		j.raw("," + in + "\"ttl_seconds\": ")
		j.num = strconv.AppendInt(j.num[:0], ttl, 10)
		if j.err == nil {
			_, j.err = j.w.Write(j.num)
		}
	}
	j.raw(in[:len(in)-2] + "}")
}

// stringMap writes a map of strings, keys sorted as encoding/json sorts
// them, whose opening brace is on a line indented by in.
func (j *jsonWriter) stringMap(m map[string]string, in string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	j.raw("{")
	for i, k := range keys {
		if i > 0 {
			j.raw(",")
		}
		j.indent(in)
		j.str(k)
		j.raw(": ")
		j.str(m[k])
	}
	j.raw(in)
	j.raw("}")
}

// strings writes a list whose opening bracket is on a line indented by
// in (a newline and the indentation).
func (j *jsonWriter) strings(list []string, in string) {
	switch {
	case list == nil:
		j.raw("null")
		return
	case len(list) == 0:
		j.raw("[]")
		return
	}
	j.raw("[")
	for i, s := range list {
		if i > 0 {
			j.raw(",")
		}
		j.indent(in)
		j.str(s)
	}
	j.raw(in)
	j.raw("]")
}

// features writes a feature set, its keys sorted as encoding/json sorts
// map keys.
func (j *jsonWriter) features(fs config.FeatureSet, in string) {
	switch {
	case fs == nil:
		j.raw("null")
		return
	case len(fs) == 0:
		j.raw("{}")
		return
	}
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	j.raw("{")
	deeper := in + "  "
	for i, k := range keys {
		if i > 0 {
			j.raw(",")
		}
		j.raw(deeper)
		j.str(k)
		j.raw(": ")
		j.strings(fs[k], deeper)
	}
	j.raw(in)
	j.raw("}")
}

// indent starts a line one level deeper than in: written in two parts,
// as in + "  " would allocate for every item.
func (j *jsonWriter) indent(in string) {
	j.raw(in)
	j.raw("  ")
}

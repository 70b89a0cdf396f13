package config

import "github.com/zclconf/go-cty/cty"

// convertPlain converts the values sandbox arguments usually hold (a
// string, a bool, a literal list of strings, a literal map of such lists)
// without go-cty's generic machinery, which for 1,000 sandboxes was a
// quarter of decoding them. ok is false for anything else — marked,
// unknown, null or mixed values included — and the caller converts as
// before; where ok is true the result is what convert.Convert returns.
func convertPlain(v cty.Value, ty cty.Type) (cty.Value, bool) {
	if v.IsMarked() || !v.IsKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	vt := v.Type()
	switch {
	case ty.IsPrimitiveType():
		return v, vt.Equals(ty)
	case ty.Equals(cty.List(cty.String)):
		return plainStringList(v)
	case ty.Equals(cty.Map(cty.List(cty.String))):
		if !vt.IsObjectType() && !vt.IsMapType() {
			return cty.NilVal, false
		}
		if v.LengthInt() == 0 {
			return cty.MapValEmpty(cty.List(cty.String)), true
		}
		m := make(map[string]cty.Value, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			lv, ok := plainStringList(ev)
			if !ok {
				return cty.NilVal, false
			}
			m[k.AsString()] = lv
		}
		return cty.MapVal(m), true
	}
	return cty.NilVal, false
}

// plainStringList converts a tuple or list of known, non-null, unmarked
// strings to a list of strings.
func plainStringList(v cty.Value) (cty.Value, bool) {
	if v.IsMarked() || !v.IsKnown() || v.IsNull() {
		return cty.NilVal, false
	}
	vt := v.Type()
	isList := vt.Equals(cty.List(cty.String))
	if !isList && !vt.IsTupleType() {
		return cty.NilVal, false
	}
	n := v.LengthInt()
	if n == 0 {
		return cty.ListValEmpty(cty.String), true
	}
	elems := make([]cty.Value, 0, n)
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if !ev.Type().Equals(cty.String) || ev.IsMarked() || !ev.IsKnown() || ev.IsNull() {
			return cty.NilVal, false
		}
		elems = append(elems, ev)
	}
	if isList {
		return v, true
	}
	return cty.ListVal(elems), true
}

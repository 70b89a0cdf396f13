package config

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// toCollection converts a tuple or object to want, a list, set or map of
// any element type, as convert.Convert would, but in linear time: go-cty
// finds the element type by unifying every element's type with every
// other's (sorting them with a quadratic comparison), so toset of 10,000
// strings took seconds and 100,000 minutes. Here the distinct element types
// are found first — usually one — and only those are unified. ok is false
// when v is not such a value; the caller then converts as before.
func toCollection(v cty.Value, want cty.Type) (cty.Value, bool) {
	target, ok := collectionType(v, want)
	if !ok {
		return cty.NilVal, false
	}
	v, marks := v.Unmark()
	cv, err := convert.Convert(v, target)
	if err != nil {
		return cty.NilVal, false
	}
	return cv.WithMarks(marks), true
}

// collectionType is the type toCollection converts v to.
func collectionType(v cty.Value, want cty.Type) (cty.Type, bool) {
	if !isDynamicCollection(want) {
		return cty.NilType, false
	}
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return cty.NilType, false
	}
	ty := v.Type()
	var etys []cty.Type
	switch {
	case ty.IsTupleType() && !want.IsMapType():
		etys = ty.TupleElementTypes()
	case ty.IsObjectType() && want.IsMapType():
		for _, aty := range ty.AttributeTypes() {
			etys = append(etys, aty)
		}
	default:
		return cty.NilType, false
	}
	if len(etys) == 0 {
		return cty.NilType, false
	}
	ety, ok := unifyDistinct(etys)
	if !ok {
		return cty.NilType, false
	}
	switch {
	case want.IsListType():
		return cty.List(ety), true
	case want.IsSetType():
		return cty.Set(ety), true
	}
	return cty.Map(ety), true
}

// unifyDistinct unifies the distinct types of tys. Types are told apart by
// their GoString, which is unique per type and linear in its size.
func unifyDistinct(tys []cty.Type) (cty.Type, bool) {
	seen := make(map[string]bool)
	var distinct []cty.Type
	for _, ty := range tys {
		if ty == cty.DynamicPseudoType {
			return cty.NilType, false // left to go-cty's rules for unknown types
		}
		key := ty.GoString()
		if !seen[key] {
			seen[key] = true
			distinct = append(distinct, ty)
		}
	}
	if len(distinct) == 1 {
		return distinct[0], true
	}
	ty, _ := convert.UnifyUnsafe(distinct)
	if ty == cty.NilType || ty == cty.DynamicPseudoType {
		return cty.NilType, false
	}
	return ty, true
}

package config

import (
	"math"
	"math/big"

	"github.com/zclconf/go-cty/cty"
)

// estimateMore is estimate for the functions of functions_terraform.go
// whose result can outgrow their arguments, so that range(1e9) or a
// setproduct of large sets is refused before it is built.
func estimateMore(name string, args []cty.Value) (size, bool) {
	var total size
	for _, a := range args {
		total = total.add(measure(a))
	}
	switch name {
	case "range":
		return size{elems: rangeCount(args)}, true
	case "setproduct":
		// Saturating: any product past the limit is refused, and a
		// product that overflowed would have wrapped to a small number.
		product := int64(1)
		for _, a := range args {
			n := int64(lengthOf(a))
			if n == 0 {
				return size{}, true
			}
			if product > MaxValueElements/n {
				return size{elems: math.MaxInt64}, true
			}
			product *= n
		}
		elems, bytes := saturatingMul(product, int64(max(len(args), 1))), saturatingMul(total.bytes, product)
		return size{elems: elems, bytes: bytes}, true
	case "chunklist", "zipmap", "slice", "reverse", "coalescelist", "setintersection", "setsubtract", "setsymmetricdifference":
		return total, true
	case "jsonencode", "base64encode", "indent":
		// Quoting, escapes and indentation: at most a few times the input.
		return size{bytes: 6*total.bytes + 16*total.elems + 16}, true
	case "strrev", "substr", "trim", "chomp", "regexall", "base64decode", "jsondecode", "csvdecode":
		return size{elems: total.bytes + total.elems, bytes: total.bytes}, true
	}
	return size{}, false
}

// rangeCount is how many numbers range(args...) makes, saturating.
func rangeCount(args []cty.Value) int64 {
	nums := make([]*big.Float, 0, 3)
	for _, a := range args {
		a, _ = a.Unmark()
		if !a.IsKnown() || a.IsNull() || a.Type() != cty.Number {
			return 0
		}
		nums = append(nums, a.AsBigFloat())
	}
	start, limit, step := big.NewFloat(0), big.NewFloat(0), big.NewFloat(1)
	switch len(nums) {
	case 1:
		limit = nums[0]
	case 2:
		start, limit = nums[0], nums[1]
	case 3:
		start, limit, step = nums[0], nums[1], nums[2]
	default:
		return 0
	}
	if step.Sign() == 0 {
		return 0 // range refuses it itself
	}
	span := new(big.Float).Sub(limit, start)
	n := new(big.Float).Quo(span, step)
	if n.Sign() <= 0 {
		return 0
	}
	if f, _ := n.Float64(); f > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	} else {
		return int64(math.Ceil(f))
	}
}

func lengthOf(v cty.Value) int {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() || !v.CanIterateElements() {
		return 0
	}
	return v.LengthInt()
}

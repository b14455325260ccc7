package grammar

import (
	"encoding/json"
	"math/big"
	"strings"
)

// numeric compiles an integer or number schema. Bounds may be any decimal
// (zod's .min(0.5), pydantic's confloat); a bounded number is generated
// without an exponent, its integers as integers and its other values as
// "i.f" with 1 to 15 fraction digits, the last not zero.
func numeric(s *object, integer bool, path string) (Expr, error) {
	b, err := readBounds(s, path)
	if err != nil {
		return nil, err
	}
	if b.lo == nil && b.hi == nil {
		if integer {
			return integerExpr(), nil
		}
		return numberExpr(), nil
	}
	var alts []Expr
	ilo, ihi := b.integers()
	if ilo == nil || ihi == nil || ilo.Cmp(ihi) <= 0 {
		if x := intRange(ilo, ihi); x != nil {
			alts = append(alts, x)
		}
	}
	if !integer {
		zero := new(big.Rat)
		// Positive values lie in [max(lo, 0), hi]; negative ones are
		// "-" and a magnitude in [max(-hi, 0), -lo].
		if b.hi == nil || b.hi.Sign() > 0 {
			lo, ex := b.lo, b.exLo
			if lo == nil || lo.Sign() < 0 {
				lo, ex = zero, false
			}
			x, err := fractions(lo, ex, b.hi, b.exHi)
			if err != nil {
				return nil, syntaxErr("minimum", "%v at %s", err, path)
			}
			if x != nil {
				alts = append(alts, x)
			}
		}
		if b.lo == nil || b.lo.Sign() < 0 {
			lo, ex := negRat(b.hi), b.exHi
			if lo == nil || lo.Sign() < 0 {
				lo, ex = zero, false
			}
			x, err := fractions(lo, ex, negRat(b.lo), b.exLo)
			if err != nil {
				return nil, syntaxErr("minimum", "%v at %s", err, path)
			}
			if x != nil {
				alts = append(alts, Seq(Lit("-"), x))
			}
		}
	}
	if len(alts) == 0 {
		return nil, syntaxErr("minimum", "no value satisfies the bounds at %s", path)
	}
	return altExpr(alts), nil
}

// numBounds are a numeric schema's bounds, the tightest of the inclusive
// and exclusive forms; nil is none.
type numBounds struct {
	lo, hi     *big.Rat
	exLo, exHi bool
}

// integers are the inclusive bounds of the integers in range (nil: none).
func (b numBounds) integers() (lo, hi *big.Int) {
	if b.lo != nil {
		lo = ceil(b.lo)
		if b.exLo && b.lo.IsInt() {
			lo = addInt(lo, 1)
		}
	}
	if b.hi != nil {
		hi = floor(b.hi)
		if b.exHi && b.hi.IsInt() {
			hi = addInt(hi, -1)
		}
	}
	return lo, hi
}

// readBounds reads minimum, maximum and the exclusive forms of both
// drafts (a number, or draft 4's flag on minimum and maximum).
func readBounds(s *object, path string) (numBounds, error) {
	var nb numBounds
	limit := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxIntDigits), nil))
	read := func(k string) (*big.Rat, error) {
		v, ok := s.get(k)
		if !ok {
			return nil, nil
		}
		if _, isBool := v.(bool); isBool {
			return nil, nil // draft 4's exclusive flag
		}
		n, ok := v.(json.Number)
		if !ok {
			return nil, syntaxErr(k, "%s at %s must be a number", k, path)
		}
		r, ok := new(big.Rat).SetString(n.String())
		if !ok {
			return nil, syntaxErr(k, "%s at %s must be a number", k, path)
		}
		if new(big.Rat).Abs(r).Cmp(limit) >= 0 {
			return nil, syntaxErr(k, "%s at %s is out of range (at most %d digits)", k, path, maxIntDigits)
		}
		return r, nil
	}
	flag := func(k string) bool { v, _ := s.get(k); return v == true }
	var vals [4]*big.Rat
	for i, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, err := read(k)
		if err != nil {
			return nb, err
		}
		vals[i] = v
	}
	lower := func(v *big.Rat, exclusive bool) {
		if v == nil {
			return
		}
		if c := cmpRat(v, nb.lo); nb.lo == nil || c > 0 || c == 0 && exclusive {
			nb.lo, nb.exLo = v, exclusive
		}
	}
	upper := func(v *big.Rat, exclusive bool) {
		if v == nil {
			return
		}
		if c := cmpRat(v, nb.hi); nb.hi == nil || c < 0 || c == 0 && exclusive {
			nb.hi, nb.exHi = v, exclusive
		}
	}
	lower(vals[0], flag("exclusiveMinimum"))
	lower(vals[1], true)
	upper(vals[2], flag("exclusiveMaximum"))
	upper(vals[3], true)
	return nb, nil
}

func cmpRat(a, b *big.Rat) int {
	if b == nil {
		return 0
	}
	return a.Cmp(b)
}

func negRat(x *big.Rat) *big.Rat {
	if x == nil {
		return nil
	}
	return new(big.Rat).Neg(x)
}

func floor(x *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(x.Num(), x.Denom(), new(big.Int)) // Euclidean: m >= 0
	_ = m
	return q
}

func ceil(x *big.Rat) *big.Int {
	f := floor(x)
	if x.IsInt() {
		return f
	}
	return addInt(f, 1)
}

// fracDigits are the decimal digits of x's fractional part ("" for an
// integer); a bound whose expansion is longer than 40 digits is refused.
func fracDigits(x *big.Rat) (string, error) {
	frac := new(big.Rat).Sub(x, new(big.Rat).SetInt(floor(x)))
	if frac.Sign() == 0 {
		return "", nil
	}
	s := frac.FloatString(40)
	back, _ := new(big.Rat).SetString(s)
	if back.Cmp(frac) != 0 {
		return "", syntaxErr("minimum", "bound %s has more than 40 fraction digits", x.FloatString(6))
	}
	return strings.TrimRight(strings.TrimPrefix(s, "0."), "0"), nil
}

// fractions matches the non-integers "i.f" between lo (≥ 0) and hi (nil:
// none), each bound exclusive as told, or is nil when there are none: the
// integer part decides, except at the bounds' own integer parts, where
// the fraction is compared digit by digit.
func fractions(lo *big.Rat, exLo bool, hi *big.Rat, exHi bool) (Expr, error) {
	anyFrac := Seq(Rep(Bytes('0', '9'), 0, maxFracDigits-1), Bytes('1', '9'))
	li := floor(lo)
	lf, err := fracDigits(lo)
	if err != nil {
		return nil, err
	}
	var hiInt *big.Int
	var hf string
	if hi != nil {
		if hi.Cmp(lo) < 0 {
			return nil, nil
		}
		hiInt = floor(hi)
		if hf, err = fracDigits(hi); err != nil {
			return nil, err
		}
	}
	frac := func(parts ...*dfa) Expr {
		d := parts[0]
		for _, p := range parts[1:] {
			var err error
			if d, err = intersect(d, p); err != nil {
				return nil
			}
		}
		if d.empty() {
			return nil
		}
		return dfaExpr{d}
	}
	var alts []Expr
	add := func(intPart *big.Int, f Expr) {
		if f != nil {
			alts = append(alts, Seq(Lit(intPart.String()), Lit("."), f))
		}
	}
	switch {
	case hiInt != nil && hiInt.Cmp(li) == 0:
		if hf != "" {
			add(li, frac(fracDFA(lf, true, exLo), fracDFA(hf, false, exHi)))
		}
	default:
		add(li, frac(fracDFA(lf, true, exLo)))
		if x := natRange(addInt(li, 1), addInt(hiInt, -1)); x != nil && (hiInt == nil || hiInt.Cmp(addInt(li, 1)) > 0) {
			alts = append(alts, Seq(x, Lit("."), anyFrac))
		}
		if hiInt != nil && hf != "" {
			add(hiInt, frac(fracDFA(hf, false, exHi)))
		}
	}
	if len(alts) == 0 {
		return nil, nil
	}
	return altExpr(alts), nil
}

// fracDFA accepts the fraction digits f (1 to maxFracDigits, the last not
// zero) with 0.f ≥ 0.d (ge), or ≤, strictly when strict.
func fracDFA(d string, ge, strict bool) *dfa {
	type key struct {
		n, rel int
		nz     bool
	}
	out := &dfa{}
	ids := map[key]int32{}
	var queue []key
	accepts := func(k key) bool {
		if k.n == 0 || !k.nz {
			return false
		}
		less := k.rel == 0 && k.n < len(d) && strings.Trim(d[k.n:], "0") != ""
		equal := k.rel == 0 && !less
		if ge {
			return k.rel > 0 || equal && !strict
		}
		return k.rel < 0 || less || equal && !strict
	}
	intern := func(k key) int32 {
		if id, ok := ids[k]; ok {
			return id
		}
		id := int32(len(out.states))
		ids[k] = id
		queue = append(queue, k)
		out.states = append(out.states, dstate{final: accepts(k)})
		return id
	}
	intern(key{})
	for i := 0; i < len(queue); i++ {
		k := queue[i]
		if k.n == maxFracDigits {
			continue
		}
		dn := byte('0')
		if k.n < len(d) {
			dn = d[k.n]
		}
		var edges []drange
		for x := byte('0'); x <= '9'; x++ {
			rel := k.rel
			if rel == 0 && x > dn {
				rel = 1
			} else if rel == 0 && x < dn {
				rel = -1
			}
			to := intern(key{k.n + 1, rel, x != '0'})
			if m := len(edges); m > 0 && edges[m-1].to == to {
				edges[m-1].hi = x
				continue
			}
			edges = append(edges, drange{x, x, to})
		}
		out.states[i].bytes = edges
	}
	return out
}

func addInt(x *big.Int, d int64) *big.Int {
	if x == nil {
		return nil
	}
	return new(big.Int).Add(x, big.NewInt(d))
}

func negInt(x *big.Int) *big.Int {
	if x == nil {
		return nil
	}
	return new(big.Int).Neg(x)
}

// maxInt is the larger of two lower bounds, nil being no bound.
func maxInt(a, b *big.Int) *big.Int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.Cmp(b) > 0:
		return a
	}
	return b
}

// intRange matches the integers in [lo, hi] (nil: unbounded, within the
// digit limit), written without leading zeros or "-0".
func intRange(lo, hi *big.Int) Expr {
	var alts []Expr
	zero := big.NewInt(0)
	if lo == nil || lo.Sign() < 0 {
		// Negative part: -n for n in [max(1, -hi), -lo].
		nlo := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			nlo = negInt(hi)
		}
		if x := natRange(nlo, negInt(lo)); x != nil {
			alts = append(alts, Seq(Lit("-"), x))
		}
	}
	if hi == nil || hi.Sign() >= 0 {
		if x := natRange(maxInt(lo, zero), hi); x != nil {
			alts = append(alts, x)
		}
	}
	if len(alts) == 0 {
		return nil
	}
	return altExpr(alts)
}

// natRange matches the decimal natural numbers in [lo, hi] (hi nil: up to
// maxIntDigits digits), or is nil when there are none.
func natRange(lo, hi *big.Int) Expr {
	limit := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxIntDigits), nil), big.NewInt(1))
	if hi == nil || hi.Cmp(limit) > 0 {
		hi = limit
	}
	if lo == nil || lo.Sign() < 0 {
		lo = big.NewInt(0)
	}
	if lo.Cmp(hi) > 0 {
		return nil
	}
	var alts []Expr
	a, b := lo.String(), hi.String()
	// Split by digit count: [a, 9…9], [10…0, 9…9] per length, [10…0, b].
	for n := len(a); n <= len(b); n++ {
		from, to := "1"+strings.Repeat("0", n-1), strings.Repeat("9", n)
		if n == 1 {
			from = "0"
		}
		if n == len(a) {
			from = a
		}
		if n == len(b) {
			to = b
		}
		alts = append(alts, fixedRange(from, to))
	}
	return altExpr(alts)
}

// fixedRange matches the digit strings of len(x) between x and y.
func fixedRange(x, y string) Expr {
	if x == "" {
		return Empty()
	}
	digits := func(n int) Expr { return Rep(Bytes('0', '9'), n, n) }
	n := len(x) - 1
	if x[0] == y[0] {
		return Seq(Lit(x[:1]), fixedRange(x[1:], y[1:]))
	}
	if strings.Trim(x[1:], "0") == "" && strings.Trim(y[1:], "9") == "" {
		return Seq(Bytes(x[0], y[0]), digits(n))
	}
	alts := []Expr{Seq(Lit(x[:1]), fixedRange(x[1:], strings.Repeat("9", n)))}
	if x[0]+1 <= y[0]-1 {
		alts = append(alts, Seq(Bytes(x[0]+1, y[0]-1), digits(n)))
	}
	alts = append(alts, Seq(Lit(y[:1]), fixedRange(strings.Repeat("0", n), y[1:])))
	return altExpr(alts)
}

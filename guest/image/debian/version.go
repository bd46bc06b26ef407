package debian

import (
	"fmt"
	"strconv"
	"strings"
)

// CompareVersions compares two Debian versions ([epoch:]upstream[-revision])
// as dpkg does: it returns a negative number if a is older than b, zero if
// they are equal and a positive number if a is newer. A '~' sorts before
// anything, even the end of the string, so "1.0~rc1" < "1.0".
func CompareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if ea != eb {
		if ea < eb {
			return -1
		}
		return 1
	}
	if c := verrevcmp(ua, ub); c != 0 {
		return c
	}
	return verrevcmp(ra, rb)
}

// splitVersion splits a version into its epoch, upstream version and
// revision. A missing or malformed epoch counts as 0.
func splitVersion(v string) (epoch uint64, upstream, revision string) {
	v = strings.TrimSpace(v)
	if e, rest, ok := strings.Cut(v, ":"); ok {
		epoch, _ = strconv.ParseUint(e, 10, 64)
		v = rest
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return epoch, v[:i], v[i+1:]
	}
	return epoch, v, ""
}

// order is the weight of one non-digit character: '~' before the end of the
// string, the end before letters, letters before everything else.
func order(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	c := s[i]
	switch {
	case c >= '0' && c <= '9':
		return 0
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return int(c)
	case c == '~':
		return -1
	}
	return int(c) + 256
}

func isDigit(s string, i int) bool { return i < len(s) && s[i] >= '0' && s[i] <= '9' }

// verrevcmp is dpkg's comparison of upstream versions and revisions:
// alternating runs of non-digits, compared by order, and digits, compared
// as numbers.
func verrevcmp(a, b string) int {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		for (i < len(a) && !isDigit(a, i)) || (j < len(b) && !isDigit(b, j)) {
			ac, bc := order(a, i), order(b, j)
			if ac != bc {
				return ac - bc
			}
			i++
			j++
		}
		for i < len(a) && a[i] == '0' {
			i++
		}
		for j < len(b) && b[j] == '0' {
			j++
		}
		firstDiff := 0
		for isDigit(a, i) && isDigit(b, j) {
			if firstDiff == 0 {
				firstDiff = int(a[i]) - int(b[j])
			}
			i++
			j++
		}
		if isDigit(a, i) {
			return 1
		}
		if isDigit(b, j) {
			return -1
		}
		if firstDiff != 0 {
			return firstDiff
		}
	}
	return 0
}

// Satisfies says whether version v meets the relation op ("<<", "<=", "=",
// ">=", ">>", and the obsolete "<" and ">" meaning "<=" and ">=") with ref.
func Satisfies(v, op, ref string) (bool, error) {
	c := CompareVersions(v, ref)
	switch op {
	case "<<":
		return c < 0, nil
	case "<=", "<":
		return c <= 0, nil
	case "=":
		return c == 0, nil
	case ">=", ">":
		return c >= 0, nil
	case ">>":
		return c > 0, nil
	}
	return false, fmt.Errorf("unknown version relation %q", op)
}

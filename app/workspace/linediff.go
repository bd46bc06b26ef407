package workspace

import (
	"slices"
	"strings"
)

// maxDiffCells bounds LineDiff's table (old lines times new lines);
// past it the whole old text is shown removed and the new added.
const maxDiffCells = 4 << 20

// diffContext is how many unchanged lines LineDiff keeps around a change.
const diffContext = 3

// LineDiff writes the lines of b against a: "-" for a line only in a,
// "+" for one only in b, " " for one in both, with runs of unchanged
// lines far from a change left out ("…"); "" when a and b
// have the same lines. It is for small text, such as
// a repository's settings files; it runs no program.
func LineDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	type op struct {
		mark byte
		line string
	}
	var ops []op
	if len(x)*len(y) > maxDiffCells {
		for _, l := range x {
			ops = append(ops, op{'-', l})
		}
		for _, l := range y {
			ops = append(ops, op{'+', l})
		}
	} else {
		// Longest common subsequence from the end, then walk forward.
		n, m := len(x), len(y)
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if x[i] == y[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && x[i] == y[j]:
				ops = append(ops, op{' ', x[i]})
				i, j = i+1, j+1
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', x[i]})
				i++
			default:
				ops = append(ops, op{'+', y[j]})
				j++
			}
		}
	}
	if !slices.ContainsFunc(ops, func(o op) bool { return o.mark != ' ' }) {
		return ""
	}
	near := make([]bool, len(ops))
	for k, o := range ops {
		if o.mark != ' ' {
			for d := max(0, k-diffContext); d <= min(len(ops)-1, k+diffContext); d++ {
				near[d] = true
			}
		}
	}
	var sb strings.Builder
	skipped := false
	for k, o := range ops {
		if !near[k] {
			if !skipped {
				sb.WriteString("…\n")
			}
			skipped = true
			continue
		}
		skipped = false
		sb.WriteByte(o.mark)
		sb.WriteString(o.line)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

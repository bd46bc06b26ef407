package policy

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecide measures Decide against a project of MaxRules rules,
// the worst one source can hold, for a name that matches none of them
// (every rule is read) and for one the defaults allow.
func BenchmarkDecide(b *testing.B) {
	var s strings.Builder
	for i := range MaxRules {
		fmt.Fprintf(&s, "allow h%d.example.com:%d\n", i, 1000+i%5000)
	}
	p, _ := compose(b, "", settings{project: s.String()})
	for _, d := range []Dest{
		{Name: "nothing.example.org", Addr: addr("93.184.216.34"), Port: 443},
		{Name: "api.anthropic.com", Addr: addr("160.79.104.10"), Port: 443},
	} {
		b.Run(d.Name, func(b *testing.B) {
			for b.Loop() {
				p.Decide(d)
			}
			b.ReportMetric(float64(len(p.rules)), "rules")
		})
	}
}

package vz

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"sandbar/vm"
)

// Properties of every plan against Apple's rules for a
// VZVirtualMachineConfiguration, over random specs and random (consistent)
// framework limits: the CPU count and the memory are within the limits,
// the memory is a whole number of MiB, and every share tag the plan keeps
// is one validateTag accepts.
func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 8))
	var nearLimit, refused int
	for i := range 5000 {
		limits := randomLimits(r)
		s := testSpec()
		s.CPUs = r.IntN(300) - 4
		s.Memory = randomMemory(r)
		s.Shares = []vm.Share{{Tag: randomTag(r), HostPath: "/Users/ann/repo"}}
		p, err := buildPlan(s, limits)
		tagOK := checkTag(s.Shares[0].Tag) == ""
		if !tagOK {
			refused++
			if err == nil {
				t.Fatalf("case %d: tag %q was planned; the framework refuses it", i, s.Shares[0].Tag)
			}
			continue
		}
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if n := len(p.Shares[0].Tag); n == 0 || n > maxTagBytes || !utf8.ValidString(p.Shares[0].Tag) {
			t.Fatalf("case %d: planned tag %q is %d bytes", i, p.Shares[0].Tag, n)
		} else if n > maxTagBytes-4 {
			nearLimit++
		}
		if p.CPUs < 1 || limits.MinCPUs > 0 && p.CPUs < limits.MinCPUs || limits.MaxCPUs > 0 && p.CPUs > limits.MaxCPUs {
			t.Fatalf("case %d: %d vCPUs asked, %d planned, outside %+v", i, s.CPUs, p.CPUs, limits)
		}
		if s.CPUs >= 1 && (limits.MaxCPUs == 0 || uint(s.CPUs) <= limits.MaxCPUs) && uint(s.CPUs) >= limits.MinCPUs && p.CPUs != uint(s.CPUs) {
			t.Fatalf("case %d: %d vCPUs within the limits became %d", i, s.CPUs, p.CPUs)
		}
		if p.Memory == 0 || p.Memory%vm.MiB != 0 {
			t.Fatalf("case %d: memory %d asked, %d planned: not a whole, positive number of MiB", i, s.Memory, p.Memory)
		}
		if p.Memory < limits.MinMemory || limits.MaxMemory > 0 && p.Memory > limits.MaxMemory {
			t.Fatalf("case %d: memory %d planned outside %d–%d", i, p.Memory, limits.MinMemory, limits.MaxMemory)
		}
		if s.Memory%vm.MiB == 0 && s.Memory >= limits.MinMemory && (limits.MaxMemory == 0 || s.Memory <= limits.MaxMemory) && s.Memory > 0 && p.Memory != s.Memory {
			t.Fatalf("case %d: memory %d within the limits became %d", i, s.Memory, p.Memory)
		}
		if p.Memory != s.Memory || p.CPUs != uint(max(s.CPUs, 0)) {
			if len(p.Adjusted) == 0 {
				t.Fatalf("case %d: the spec was changed (%d vCPUs %d bytes → %d, %d) with no note for the log", i, s.CPUs, s.Memory, p.CPUs, p.Memory)
			}
		}
	}
	if nearLimit == 0 || refused == 0 {
		t.Errorf("the random tags no longer reach the limit (%d within 3 bytes of it, %d refused)", nearLimit, refused)
	}
}

// randomLimits are limits a Mac could report: none known, or a range
// holding at least one whole MiB.
func randomLimits(r *rand.Rand) Limits {
	if r.IntN(5) == 0 {
		return Limits{}
	}
	minC := uint(1 + r.IntN(2))
	minM := uint64(r.IntN(64))*vm.MiB + uint64(r.IntN(2))*uint64(r.IntN(vm.MiB))
	maxM := minM + vm.MiB + uint64(r.Int64N(64<<30))
	if maxM/vm.MiB*vm.MiB < (minM+vm.MiB-1)/vm.MiB*vm.MiB {
		maxM += vm.MiB
	}
	return Limits{MinCPUs: minC, MaxCPUs: minC + uint(r.IntN(32)), MinMemory: minM, MaxMemory: maxM}
}

func randomMemory(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return uint64(r.IntN(1<<16)) * vm.MiB // whole MiB, up to 64 GiB
	case 1:
		return r.Uint64N(1 << 40) // any byte count up to 1 TiB
	case 2:
		return uint64(r.IntN(8)) // next to nothing
	default:
		return uint64(float64(r.IntN(64)+1) * r.Float64() * (1 << 30)) // fractional GiB
	}
}

// randomTag is made of letters (ASCII and multi-byte), digits, - and _ at
// lengths around the 36-byte limit, and now and then one of the
// characters validateTag refuses.
func randomTag(r *rand.Rand) string {
	ok := []string{"a", "Z", "0", "-", "_", "é", "語"}
	bad := []string{" ", ",", "=", "/", "\x00"}
	var b strings.Builder
	n := r.IntN(40)
	for range n {
		b.WriteString(ok[r.IntN(len(ok))])
	}
	tag := b.String()
	if n > 0 && r.IntN(4) == 0 {
		i := r.IntN(len(tag) + 1)
		for i > 0 && !utf8.RuneStart(tag[min(i, len(tag)-1)]) {
			i--
		}
		tag = tag[:i] + bad[r.IntN(len(bad))] + tag[i:]
	}
	return tag
}

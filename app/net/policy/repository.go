package policy

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// RepositoryAdvice is what a refusal of CheckRepository tells the person
// to do instead.
const RepositoryAdvice = "put wider rules in your own settings: sandbar net rules --project"

// RepositoryError is a rule of a repository's network file that opens
// more than such a file may, even once the person trusts it:
//
//	line 3: `allow *.co.uk:*`: a repository's network file may not use a `*` port; put wider rules in your own settings: sandbar net rules --project
type RepositoryError struct {
	Line    int    // 1-based; 0 for a rule built without a line
	Text    string // the rule as written
	Problem string // which limit the rule passes
}

func (e *RepositoryError) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf("line %d: ", e.Line)
	}
	return fmt.Sprintf("%s`%s`: %s; %s", at, e.Text, e.Problem, RepositoryAdvice)
}

// CheckRepository holds a parsed repository network file (a
// .sandbar/network the person trusted) to what a repository may add:
// names and single addresses, on named ports. Its allow rules may not
// be for any host, a wildcard (one over a public suffix by the Public
// Suffix List, *.co.uk or *.github.io, says so; any other, such as
// *.amazonaws.com, can cover hosts anyone makes too), a range wider than
// one address, or a port range or "*". Deny
// rules only narrow and pass. It works on parsed rules, so a rule form
// added to the grammar later is held to the same limits.
//
// The error joins a *RepositoryError per refused rule (errors.Join);
// a file with any is refused whole.
func CheckRepository(f File) error {
	var errs []error
	for _, r := range f.Rules {
		if r.Action != Allow {
			continue
		}
		if p := repositoryProblem(r); p != "" {
			text := r.Text
			if text == "" {
				text = r.String()
			}
			errs = append(errs, &RepositoryError{Line: r.Line, Text: cut(text), Problem: p})
		}
	}
	return errors.Join(errs...)
}

// repositoryProblem says which limit an allow rule passes, or "".
func repositoryProblem(r Rule) string {
	const who = "a repository's network file may not "
	switch {
	case r.PortGiven && r.PortLo == 1 && r.PortHi == 65535:
		return who + "use a `*` port"
	case r.PortLo != r.PortHi:
		return who + fmt.Sprintf("allow a range of ports (%d-%d): name each port", r.PortLo, r.PortHi)
	case r.Host == "*" && !r.Prefix.IsValid():
		return who + "allow every host"
	case r.Prefix.IsValid() && !r.Prefix.IsSingleIP():
		return who + fmt.Sprintf("allow a range of addresses (%s): name single addresses (/32, /128)", r.Prefix)
	case r.Wildcard:
		under := strings.TrimPrefix(r.Host, "*.")
		if ps, _ := publicsuffix.PublicSuffix(under); ps == under {
			return who + fmt.Sprintf("use a wildcard over the public suffix %s (Public Suffix List): name the hosts", under)
		}
		// Not over a public suffix, a wildcard can still cover hosts
		// anyone may make: *.amazonaws.com holds every S3 bucket (the
		// List names such suffixes beneath it, which it cannot be asked
		// for). A repository names its hosts.
		return who + fmt.Sprintf("use a wildcard (%s): name each host", r.Host)
	}
	return ""
}

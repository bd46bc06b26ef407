package ociimage

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The kinds of failure a person can act on. Every error Pull returns for
// one of them is an *Error whose Is matches the kind.
var (
	// ErrNotFound: the registry has no such repository, tag or digest.
	ErrNotFound = errors.New("image not found")
	// ErrUnauthorized: the registry wants credentials (401) or refused
	// the ones given (403).
	ErrUnauthorized = errors.New("registry refused access")
	// ErrNoPlatform: the image has no manifest for the wanted platform.
	ErrNoPlatform = errors.New("no image for this platform")
	// ErrTooLarge: the image is over PullOptions.MaxBytes.
	ErrTooLarge = errors.New("image over the size limit")
	// ErrDiskFull: the disk holding the store ran out of space.
	ErrDiskFull = errors.New("disk full")
	// ErrUnreachable: the registry could not be reached.
	ErrUnreachable = errors.New("registry unreachable")
)

// Error is a failed pull in words a person can act on: Msg says what
// happened and what to do; Err keeps the cause for logs and errors.As.
type Error struct {
	Kind error
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// diskErr turns a write that failed for lack of space into ErrDiskFull,
// naming the folder that is full; other errors pass through.
func diskErr(dir string, err error) error {
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	var e *Error
	if errors.As(err, &e) && e.Kind == ErrDiskFull {
		return err
	}
	return &Error{Kind: ErrDiskFull, Err: err,
		Msg: fmt.Sprintf("the disk holding %s is full: free some space there (or remove unused images in Settings → Storage) and pull again", dir)}
}

// remoteErr says what a failed registry call means for ref, with the
// credentials source that was tried (creds) and whether it had any for
// the registry (hadCreds).
func remoteErr(err error, p *pull) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	reg := p.ref.Context().RegistryStr()
	repo := p.ref.Context().RepositoryStr()
	var terr *transport.Error
	if errors.As(err, &terr) {
		codes := map[transport.ErrorCode]bool{}
		for _, d := range terr.Errors {
			codes[d.Code] = true
		}
		switch {
		case terr.StatusCode == http.StatusUnauthorized || codes[transport.UnauthorizedErrorCode]:
			if !p.hadCreds {
				return &Error{Kind: ErrUnauthorized, Err: err,
					Msg: fmt.Sprintf("%s needs credentials for %s (or has no such image): no credentials for %s in %s; run `docker login %s` if the image is private, else check its name", reg, repo, reg, p.credsSource, reg)}
			}
			return &Error{Kind: ErrUnauthorized, Err: err,
				Msg: fmt.Sprintf("%s refused the credentials for %s in %s (HTTP 401): run `docker login %s` again", reg, reg, p.credsSource, reg)}
		case terr.StatusCode == http.StatusForbidden || codes[transport.DeniedErrorCode]:
			who := "anonymous pulls"
			if p.hadCreds {
				who = "the account in " + p.credsSource
			}
			return &Error{Kind: ErrUnauthorized, Err: err,
				Msg: fmt.Sprintf("%s denied access to %s for %s (HTTP 403): run `docker login %s` with an account that may pull it", reg, repo, who, reg)}
		case terr.StatusCode == http.StatusNotFound || codes[transport.ManifestUnknownErrorCode] || codes[transport.NameUnknownErrorCode]:
			return &Error{Kind: ErrNotFound, Err: err,
				Msg: fmt.Sprintf("%s has no image %s: check the name and the tag", reg, p.repoRef())}
		}
		return &Error{Kind: ErrUnreachable, Err: err,
			Msg: fmt.Sprintf("registry %s failed to serve %s (HTTP %d): try again later", reg, p.refName(), terr.StatusCode)}
	}
	var nerr net.Error
	var x509err x509.UnknownAuthorityError
	var certErr *x509.CertificateInvalidError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &x509err), errors.As(err, &certErr), errors.As(err, &hostErr):
		return &Error{Kind: ErrUnreachable, Err: err,
			Msg: fmt.Sprintf("cannot trust registry %s: its TLS certificate does not verify (%v)", reg, rootCause(err))}
	case errors.As(err, &nerr), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return &Error{Kind: ErrUnreachable, Err: err,
			Msg: fmt.Sprintf("cannot reach registry %s (%s): check the image name and your network, then pull again", reg, netCause(err))}
	}
	return err
}

// netCause is the failed network operation's own words ("connect:
// connection refused", "lookup x: no such host"), or the root cause.
func netCause(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return rootCause(err)
}

// rootCause is the innermost error's text, without the URL go's HTTP
// client puts in front.
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	return strings.TrimSpace(err.Error())
}

package hosttrust

/*
#cgo LDFLAGS: -framework CoreFoundation -framework Security
#include <CoreFoundation/CoreFoundation.h>
#include <Security/Security.h>

// sandbarSSLVerdict reads one certificate's trust settings (an array of
// dictionaries, each a usage constraint; empty: trusted as a root for
// everything) for SSL: 1 trusted as a root, -1 denied, 0 unspecified.
// Constraints for another policy, one application or one host name do
// not apply to every HTTPS connection and are passed over.
static int sandbarSSLVerdict(CFArrayRef settings) {
	CFIndex n = CFArrayGetCount(settings);
	if (n == 0) {
		return 1;
	}
	for (CFIndex i = 0; i < n; i++) {
		CFDictionaryRef d = (CFDictionaryRef)CFArrayGetValueAtIndex(settings, i);
		if (CFDictionaryContainsKey(d, kSecTrustSettingsApplication) || CFDictionaryContainsKey(d, kSecTrustSettingsPolicyString)) {
			continue;
		}
		SecPolicyRef pol = (SecPolicyRef)CFDictionaryGetValue(d, kSecTrustSettingsPolicy);
		if (pol != NULL) {
			int ssl = 0;
			CFDictionaryRef props = SecPolicyCopyProperties(pol);
			if (props != NULL) {
				CFTypeRef oid = CFDictionaryGetValue(props, kSecPolicyOid);
				ssl = oid != NULL && CFEqual(oid, kSecPolicyAppleSSL);
				CFRelease(props);
			}
			if (!ssl) {
				continue;
			}
		}
		SInt32 result = kSecTrustSettingsResultTrustRoot;
		CFNumberRef r = (CFNumberRef)CFDictionaryGetValue(d, kSecTrustSettingsResult);
		if (r != NULL) {
			CFNumberGetValue(r, kCFNumberSInt32Type, &result);
		}
		if (result == kSecTrustSettingsResultTrustRoot || result == kSecTrustSettingsResultTrustAsRoot) {
			return 1;
		}
		if (result == kSecTrustSettingsResultDeny) {
			return -1;
		}
	}
	return 0;
}

// sandbarTrustSettings fills trusted and denied with the DER (CFData) of
// the certificates that domain (0 user, 1 admin) trusts or denies for
// SSL. The caller releases both. It returns the OSStatus of reading the
// domain; errSecNoTrustSettings (none set) leaves both empty.
static OSStatus sandbarTrustSettings(int domain, CFMutableArrayRef *trusted, CFMutableArrayRef *denied) {
	*trusted = CFArrayCreateMutable(kCFAllocatorDefault, 0, &kCFTypeArrayCallBacks);
	*denied = CFArrayCreateMutable(kCFAllocatorDefault, 0, &kCFTypeArrayCallBacks);
	SecTrustSettingsDomain dom = domain == 0 ? kSecTrustSettingsDomainUser : kSecTrustSettingsDomainAdmin;
	CFArrayRef certs = NULL;
	OSStatus st = SecTrustSettingsCopyCertificates(dom, &certs);
	if (st == errSecNoTrustSettings) {
		return errSecSuccess;
	}
	if (st != errSecSuccess || certs == NULL) {
		return st;
	}
	for (CFIndex i = 0; i < CFArrayGetCount(certs); i++) {
		SecCertificateRef c = (SecCertificateRef)CFArrayGetValueAtIndex(certs, i);
		CFArrayRef settings = NULL;
		if (SecTrustSettingsCopyTrustSettings(c, dom, &settings) != errSecSuccess || settings == NULL) {
			continue;
		}
		int v = sandbarSSLVerdict(settings);
		CFRelease(settings);
		if (v == 0) {
			continue;
		}
		CFDataRef der = SecCertificateCopyData(c);
		if (der == NULL) {
			continue;
		}
		CFArrayAppendValue(v > 0 ? *trusted : *denied, der);
		CFRelease(der);
	}
	CFRelease(certs);
	return errSecSuccess;
}

// sandbarDERAt points at the bytes of the CFData at i of arr.
static const UInt8 *sandbarDERAt(CFArrayRef arr, CFIndex i, CFIndex *n) {
	CFDataRef d = (CFDataRef)CFArrayGetValueAtIndex(arr, i);
	*n = CFDataGetLength(d);
	return CFDataGetBytePtr(d);
}
*/
import "C"

import (
	"context"
	"crypto/sha256"
	"unsafe"
)

// macOS: the certificates the user's and the admin's trust settings (the
// login and System keychains, as Keychain Access sets them) trust as
// roots for SSL. The system's own roots (the system domain) are not
// taken: the VM's Debian bundle has its own. A certificate the user's
// settings deny is not taken even where the admin's trust it. Written
// against the Security framework's documented API and type-checked by the
// darwin check; not yet run on a Mac.
func platform(ctx context.Context, c *collector) error {
	denied := map[[32]byte]bool{}
	type found struct {
		from string
		der  [][]byte
	}
	var all []found
	for _, d := range []struct {
		domain int
		from   string
	}{
		{0, "the login keychain's trust settings (user)"},
		{1, "the System keychain's trust settings (admin)"},
	} {
		if err := ctx.Err(); err != nil {
			return err
		}
		var trusted, deny C.CFMutableArrayRef
		st := C.sandbarTrustSettings(C.int(d.domain), &trusted, &deny)
		t, n := derList(C.CFArrayRef(trusted)), derList(C.CFArrayRef(deny))
		C.CFRelease(C.CFTypeRef(trusted))
		C.CFRelease(C.CFTypeRef(deny))
		if st != 0 {
			c.skip(d.from, "cannot be read (OSStatus %d)", int(st))
			continue
		}
		for _, der := range n {
			denied[sha256.Sum256(der)] = true
		}
		all = append(all, found{d.from, t})
	}
	for _, f := range all {
		for _, der := range f.der {
			if !denied[sha256.Sum256(der)] {
				c.der(f.from, der)
			}
		}
	}
	return nil
}

// derList copies out the DER of each CFData in arr.
func derList(arr C.CFArrayRef) [][]byte {
	n := int(C.CFArrayGetCount(arr))
	out := make([][]byte, 0, n)
	for i := range n {
		var size C.CFIndex
		p := C.sandbarDERAt(arr, C.CFIndex(i), &size)
		out = append(out, C.GoBytes(unsafe.Pointer(p), C.int(size)))
	}
	return out
}

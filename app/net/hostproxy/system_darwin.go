package hostproxy

/*
#cgo LDFLAGS: -framework CoreFoundation -framework CFNetwork
#include <stdlib.h>

char *sandbarSystemProxies(void);
char *sandbarProxiesForURL(const char *target, double timeout, char **err);
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
	"unsafe"
)

// System is this machine's proxy setup for Sandbar's own connections: on
// macOS the environment's HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY
// when one of the first three is set (a terminal that sets them means
// them); otherwise the system's settings (CFNetworkCopySystemProxySettings:
// the HTTPS, HTTP and SOCKS proxies, the exceptions, simple host names),
// and a proxy auto-configuration (PAC URL or discovery) run by CFNetwork
// per destination (system_darwin.c). Written against CFNetwork's
// documented API and type-checked by the darwin check; not yet run on a
// Mac.
func System(ctx context.Context, lookup Lookup) (*Config, error) {
	if envSet(lookup) {
		return FromEnv(lookup)
	}
	cs := C.sandbarSystemProxies()
	if cs == nil {
		// No settings to read: as if none were set.
		return FromEnv(lookup)
	}
	text := C.GoString(cs)
	C.free(unsafe.Pointer(cs))
	cache := &pacCache{}
	return fromSettings(parseSettings(text), func(ctx context.Context, target *url.URL) (*url.URL, error) {
		return pacProxy(ctx, cache, target)
	})
}

// pacTimeout bounds one run of the auto-configuration script (fetching it
// included) when ctx sets no earlier deadline.
const pacTimeout = 10 * time.Second

// pacProxy asks CFNetwork which proxy reaches target, once per scheme,
// host and port.
func pacProxy(ctx context.Context, cache *pacCache, target *url.URL) (*url.URL, error) {
	key := target.Scheme + "://" + target.Host
	if u, ok := cache.get(key); ok {
		return u, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	timeout := pacTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	ct := C.CString(key + "/")
	defer C.free(unsafe.Pointer(ct))
	var cerr *C.char
	cs := C.sandbarProxiesForURL(ct, C.double(timeout.Seconds()), &cerr)
	if cs == nil {
		msg := "no answer"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		if err := ctx.Err(); err != nil {
			return nil, errors.Join(err, errors.New(msg))
		}
		return nil, fmt.Errorf("the proxy auto-configuration for %s: %s", key, msg)
	}
	text := C.GoString(cs)
	C.free(unsafe.Pointer(cs))
	u, err := parsePACAnswer(text)
	if err != nil {
		return nil, err
	}
	cache.put(key, u)
	return u, nil
}

// The system's proxy settings and proxy auto-configuration, through
// CFNetwork (CFProxySupport.h). Written against the documented API; the
// darwin check type-checks the Go side only, so this is checked on a Mac.

#include <CoreFoundation/CoreFoundation.h>
#include <CFNetwork/CFNetwork.h>
#include <stdlib.h>
#include <string.h>

// cString copies s as a malloc'd UTF-8 C string.
static char *cString(CFStringRef s) {
	CFIndex n = CFStringGetMaximumSizeForEncoding(CFStringGetLength(s), kCFStringEncodingUTF8) + 1;
	char *buf = malloc(n);
	if (buf == NULL) {
		return NULL;
	}
	if (!CFStringGetCString(s, buf, n, kCFStringEncodingUTF8)) {
		buf[0] = 0;
	}
	return buf;
}

// put appends "key=value\n" for a number, a string, or an array of
// strings (joined by commas).
static void put(CFMutableStringRef out, CFDictionaryRef d, CFStringRef key) {
	CFTypeRef v = CFDictionaryGetValue(d, key);
	if (v == NULL) {
		return;
	}
	CFTypeID t = CFGetTypeID(v);
	if (t == CFNumberGetTypeID()) {
		long long n = 0;
		CFNumberGetValue((CFNumberRef)v, kCFNumberLongLongType, &n);
		CFStringAppendFormat(out, NULL, CFSTR("%@=%lld\n"), key, n);
	} else if (t == CFStringGetTypeID()) {
		CFStringAppendFormat(out, NULL, CFSTR("%@=%@\n"), key, (CFStringRef)v);
	} else if (t == CFArrayGetTypeID()) {
		CFMutableStringRef joined = CFStringCreateMutable(NULL, 0);
		CFArrayRef a = (CFArrayRef)v;
		for (CFIndex i = 0; i < CFArrayGetCount(a); i++) {
			CFTypeRef e = CFArrayGetValueAtIndex(a, i);
			if (e != NULL && CFGetTypeID(e) == CFStringGetTypeID()) {
				if (CFStringGetLength(joined) > 0) {
					CFStringAppend(joined, CFSTR(","));
				}
				CFStringAppend(joined, (CFStringRef)e);
			}
		}
		CFStringAppendFormat(out, NULL, CFSTR("%@=%@\n"), key, joined);
		CFRelease(joined);
	}
}

// sandbarSystemProxies returns the system's proxy settings as
// "Key=value" lines (malloc'd), or NULL when there are none to read.
char *sandbarSystemProxies(void) {
	CFDictionaryRef d = CFNetworkCopySystemProxySettings();
	if (d == NULL) {
		return NULL;
	}
	CFStringRef keys[] = {
		kCFNetworkProxiesHTTPEnable, kCFNetworkProxiesHTTPProxy, kCFNetworkProxiesHTTPPort,
		kCFNetworkProxiesHTTPSEnable, kCFNetworkProxiesHTTPSProxy, kCFNetworkProxiesHTTPSPort,
		kCFNetworkProxiesSOCKSEnable, kCFNetworkProxiesSOCKSProxy, kCFNetworkProxiesSOCKSPort,
		kCFNetworkProxiesProxyAutoConfigEnable, kCFNetworkProxiesProxyAutoConfigURLString,
		kCFNetworkProxiesProxyAutoDiscoveryEnable,
		kCFNetworkProxiesExceptionsList, kCFNetworkProxiesExcludeSimpleHostnames,
	};
	CFMutableStringRef out = CFStringCreateMutable(NULL, 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		put(out, d, keys[i]);
	}
	char *s = cString(out);
	CFRelease(out);
	CFRelease(d);
	return s;
}

// appendProxy appends "TYPE HOST PORT\n" for one proxy dictionary, or
// "DIRECT\n".
static void appendProxy(CFMutableStringRef out, CFDictionaryRef p) {
	CFStringRef type = CFDictionaryGetValue(p, kCFProxyTypeKey);
	if (type == NULL) {
		return;
	}
	if (CFEqual(type, kCFProxyTypeNone)) {
		CFStringAppend(out, CFSTR("DIRECT\n"));
		return;
	}
	CFStringRef name = NULL;
	if (CFEqual(type, kCFProxyTypeHTTP)) {
		name = CFSTR("HTTP");
	} else if (CFEqual(type, kCFProxyTypeHTTPS)) {
		name = CFSTR("HTTPS");
	} else if (CFEqual(type, kCFProxyTypeSOCKS)) {
		name = CFSTR("SOCKS");
	} else {
		return;
	}
	CFStringRef host = CFDictionaryGetValue(p, kCFProxyHostNameKey);
	CFNumberRef port = CFDictionaryGetValue(p, kCFProxyPortNumberKey);
	if (host == NULL || port == NULL) {
		return;
	}
	long long n = 0;
	CFNumberGetValue(port, kCFNumberLongLongType, &n);
	CFStringAppendFormat(out, NULL, CFSTR("%@ %@ %lld\n"), name, host, n);
}

// pacResult is where a PAC run's callback leaves its answer.
typedef struct {
	CFArrayRef proxies;
	CFErrorRef error;
	int done;
} pacResult;

static void pacDone(void *client, CFArrayRef proxies, CFErrorRef error) {
	pacResult *r = client;
	if (error != NULL) {
		r->error = (CFErrorRef)CFRetain(error);
	} else if (proxies != NULL) {
		r->proxies = (CFArrayRef)CFRetain(proxies);
	}
	r->done = 1;
	CFRunLoopStop(CFRunLoopGetCurrent());
}

// runPAC runs one auto-configuration (a script's URL, or the script
// itself) for url on this thread's run loop, at most timeout seconds,
// and appends its proxies.
static int runPAC(CFMutableStringRef out, CFDictionaryRef p, CFURLRef url, double timeout, char **err) {
	pacResult r = {NULL, NULL, 0};
	CFStreamClientContext ctx = {0, &r, NULL, NULL, NULL};
	CFRunLoopSourceRef src = NULL;
	CFStringRef type = CFDictionaryGetValue(p, kCFProxyTypeKey);
	if (CFEqual(type, kCFProxyTypeAutoConfigurationURL)) {
		CFURLRef script = CFDictionaryGetValue(p, kCFProxyAutoConfigurationURLKey);
		if (script != NULL) {
			src = CFNetworkExecuteProxyAutoConfigurationURL(script, url, pacDone, &ctx);
		}
	} else {
		CFStringRef script = CFDictionaryGetValue(p, kCFProxyAutoConfigurationJavaScriptKey);
		if (script != NULL) {
			src = CFNetworkExecuteProxyAutoConfigurationScript(script, url, pacDone, &ctx);
		}
	}
	if (src == NULL) {
		*err = strdup("the proxy auto-configuration names no script");
		return 0;
	}
	CFStringRef mode = CFSTR("sandbar.proxy-auto-configuration");
	CFRunLoopAddSource(CFRunLoopGetCurrent(), src, mode);
	CFAbsoluteTime end = CFAbsoluteTimeGetCurrent() + timeout;
	while (!r.done && CFAbsoluteTimeGetCurrent() < end) {
		CFRunLoopRunInMode(mode, end - CFAbsoluteTimeGetCurrent(), false);
	}
	CFRunLoopRemoveSource(CFRunLoopGetCurrent(), src, mode);
	CFRunLoopSourceInvalidate(src);
	CFRelease(src);
	if (!r.done) {
		*err = strdup("the proxy auto-configuration script did not answer in time");
		return 0;
	}
	if (r.error != NULL) {
		CFStringRef desc = CFErrorCopyDescription(r.error);
		*err = cString(desc);
		CFRelease(desc);
		CFRelease(r.error);
		return 0;
	}
	if (r.proxies != NULL) {
		for (CFIndex i = 0; i < CFArrayGetCount(r.proxies); i++) {
			appendProxy(out, CFArrayGetValueAtIndex(r.proxies, i));
		}
		CFRelease(r.proxies);
	}
	return 1;
}

// sandbarProxiesForURL returns the proxies the system would use for
// target, in order, as "TYPE HOST PORT" or "DIRECT" lines (malloc'd),
// running a proxy auto-configuration when the settings name one; NULL
// with *err set (malloc'd) when it cannot tell.
char *sandbarProxiesForURL(const char *target, double timeout, char **err) {
	*err = NULL;
	CFDictionaryRef settings = CFNetworkCopySystemProxySettings();
	if (settings == NULL) {
		*err = strdup("the system's proxy settings cannot be read");
		return NULL;
	}
	CFStringRef ts = CFStringCreateWithCString(NULL, target, kCFStringEncodingUTF8);
	CFURLRef url = ts == NULL ? NULL : CFURLCreateWithString(NULL, ts, NULL);
	if (url == NULL) {
		if (ts != NULL) {
			CFRelease(ts);
		}
		CFRelease(settings);
		*err = strdup("not a URL");
		return NULL;
	}
	CFArrayRef list = CFNetworkCopyProxiesForURL(url, settings);
	CFMutableStringRef out = CFStringCreateMutable(NULL, 0);
	int ok = 1;
	if (list != NULL) {
		for (CFIndex i = 0; ok && i < CFArrayGetCount(list); i++) {
			CFDictionaryRef p = CFArrayGetValueAtIndex(list, i);
			CFStringRef type = CFDictionaryGetValue(p, kCFProxyTypeKey);
			if (type != NULL && (CFEqual(type, kCFProxyTypeAutoConfigurationURL) || CFEqual(type, kCFProxyTypeAutoConfigurationJavaScript))) {
				ok = runPAC(out, p, url, timeout, err);
			} else {
				appendProxy(out, p);
			}
		}
		CFRelease(list);
	}
	char *s = ok ? cString(out) : NULL;
	CFRelease(out);
	CFRelease(url);
	CFRelease(ts);
	CFRelease(settings);
	return s;
}

//go:build darwin

#import <AppKit/AppKit.h>
#import <objc/runtime.h>
#include <stdint.h>
#include "_cgo_export.h"

// See menubar_darwin.go.

void sandbarAccessory(void) {
	[NSApplication sharedApplication];
	[NSApp setActivationPolicy:NSApplicationActivationPolicyAccessory];
}

// The Go function to run when AppKit asks to terminate (a cgo.Handle), and
// whether it runs already. Only the main thread touches them.
static uintptr_t quitHandle;
static BOOL quitting;

// sandbarShouldTerminate replaces GLFW's applicationShouldTerminate:. Go
// stops the sessions on its own goroutine; AppKit runs its loop in the
// modal-panel mode until sandbarAllowTermination replies, and the main
// queue, which that reply comes through, is served in that mode too.
static NSApplicationTerminateReply sandbarShouldTerminate(id self, SEL _cmd, NSApplication *sender) {
	if (!quitting) {
		quitting = YES;
		sandbarQuitRequested(quitHandle);
	}
	return NSTerminateLater;
}

int sandbarTakeTermination(uintptr_t quit) {
	id delegate = [NSApp delegate];
	if (delegate == nil) {
		return 0;
	}
	quitHandle = quit;
	SEL sel = @selector(applicationShouldTerminate:);
	Class cls = object_getClass(delegate);
	Method m = class_getInstanceMethod(cls, sel);
	// NSApplicationTerminateReply is an NSUInteger: "Q@:@" on 64-bit.
	const char *types = m != NULL ? method_getTypeEncoding(m) : "Q@:@";
	class_replaceMethod(cls, sel, (IMP)sandbarShouldTerminate, types);
	return 1;
}

void sandbarAllowTermination(void) {
	dispatch_async(dispatch_get_main_queue(), ^{
		[NSApp replyToApplicationShouldTerminate:YES];
	});
}

//go:build darwin

#import <AppKit/AppKit.h>
#include <stdint.h>
#include "_cgo_export.h"

// See chooser_darwin.go. Not yet run on a Mac.
//
// The panel is begun (not run modally) on the main thread, so Fyne's
// windows keep drawing while it is up; its completion handler, also on the
// main thread, hands the answer to Go exactly once.
void sandbarChooseFolder(uintptr_t handle, const char *message) {
	NSString *msg = message != NULL ? [[NSString alloc] initWithUTF8String:message] : nil;
	dispatch_async(dispatch_get_main_queue(), ^{
		NSOpenPanel *panel = [[NSOpenPanel openPanel] retain];
		panel.canChooseDirectories = YES;
		panel.canChooseFiles = NO;
		panel.allowsMultipleSelection = NO;
		panel.canCreateDirectories = NO;
		panel.resolvesAliases = YES;
		panel.prompt = @"Add";
		if (msg != nil) {
			panel.message = msg;
			[msg release];
		}
		// A menu-bar (accessory) app is not active by itself: bring the
		// panel to the front.
		[NSApp activateIgnoringOtherApps:YES];
		[panel beginWithCompletionHandler:^(NSModalResponse result) {
			NSURL *url = panel.URL;
			if (result == NSModalResponseOK && url != nil && url.isFileURL) {
				sandbarFolderChosen(handle, (char *)url.fileSystemRepresentation);
			} else {
				sandbarFolderChosen(handle, NULL);
			}
			[panel release];
		}];
	});
}

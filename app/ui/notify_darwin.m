//go:build darwin

// The Objective-C half of notify_darwin.go: UNUserNotificationCenter with
// a delegate that hands the session of a clicked notification to Go.
// Manual retain/release, as cgo compiles it.

#import <Foundation/Foundation.h>
#import <UserNotifications/UserNotifications.h>
#include <stdint.h>
#include "_cgo_export.h"

@interface SandbarNotificationDelegate : NSObject <UNUserNotificationCenterDelegate>
@property (atomic) uintptr_t handle;
@end

@implementation SandbarNotificationDelegate

// A menu-bar app counts as frontmost while its menu is open: show the
// notification then too.
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
       willPresentNotification:(UNNotification *)notification
         withCompletionHandler:(void (^)(UNNotificationPresentationOptions))completionHandler {
	completionHandler(UNNotificationPresentationOptionBanner | UNNotificationPresentationOptionList |
		UNNotificationPresentationOptionSound);
}

// The notification itself (the default action) or its Open button.
- (void)userNotificationCenter:(UNUserNotificationCenter *)center
didReceiveNotificationResponse:(UNNotificationResponse *)response
         withCompletionHandler:(void (^)(void))completionHandler {
	NSString *action = response.actionIdentifier;
	id session = response.notification.request.content.userInfo[@"session"];
	uintptr_t h = self.handle;
	if (h != 0 && [session isKindOfClass:[NSString class]] &&
		([action isEqualToString:UNNotificationDefaultActionIdentifier] || [action isEqualToString:@"open"])) {
		sandbarNotificationOpened(h, (char *)[(NSString *)session UTF8String]);
	}
	completionHandler();
}

@end

static SandbarNotificationDelegate *sandbarDelegate;

int sandbarNotifyStart(uintptr_t handle) {
	@autoreleasepool {
		// Without a bundle, currentNotificationCenter raises.
		if ([[NSBundle mainBundle] bundleIdentifier] == nil) {
			return 0;
		}
		UNUserNotificationCenter *center = [UNUserNotificationCenter currentNotificationCenter];
		sandbarDelegate = [[SandbarNotificationDelegate alloc] init];
		sandbarDelegate.handle = handle;
		center.delegate = sandbarDelegate;
		UNNotificationAction *open = [UNNotificationAction actionWithIdentifier:@"open"
			title:@"Open" options:UNNotificationActionOptionForeground];
		UNNotificationCategory *category = [UNNotificationCategory categoryWithIdentifier:@"session"
			actions:@[open] intentIdentifiers:@[] options:UNNotificationCategoryOptionNone];
		[center setNotificationCategories:[NSSet setWithObject:category]];
		[center requestAuthorizationWithOptions:(UNAuthorizationOptionAlert | UNAuthorizationOptionSound)
			completionHandler:^(BOOL granted, NSError *error) {}];
		return 1;
	}
}

void sandbarNotify(const char *ident, const char *session, const char *title, const char *body) {
	@autoreleasepool {
		UNMutableNotificationContent *content = [[[UNMutableNotificationContent alloc] init] autorelease];
		content.title = [NSString stringWithUTF8String:title];
		content.body = [NSString stringWithUTF8String:body];
		content.categoryIdentifier = @"session";
		content.threadIdentifier = [NSString stringWithUTF8String:session];
		content.userInfo = @{@"session": [NSString stringWithUTF8String:session]};
		UNNotificationRequest *request = [UNNotificationRequest
			requestWithIdentifier:[NSString stringWithUTF8String:ident] content:content trigger:nil];
		[[UNUserNotificationCenter currentNotificationCenter] addNotificationRequest:request withCompletionHandler:nil];
	}
}

void sandbarNotifyStop(void) {
	@autoreleasepool {
		if (sandbarDelegate == nil) {
			return;
		}
		sandbarDelegate.handle = 0;
		[UNUserNotificationCenter currentNotificationCenter].delegate = nil;
		[sandbarDelegate release];
		sandbarDelegate = nil;
	}
}

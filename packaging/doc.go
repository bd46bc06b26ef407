// Package packaging holds no code: it is the home of the files that turn a
// Sandbar binary into an installed app, and of the test that keeps them
// honest.
//
//   - sandbar.entitlements: com.apple.security.virtualization, the one
//     entitlement Virtualization.framework needs (NAT networking needs none).
//   - codesign.sh BINARY_OR_APP: ad-hoc signs with those entitlements;
//     `make build` runs it on macOS.
//   - go-test-exec.sh: a `go test -exec` wrapper that signs the test binary
//     first, so VM tests can run on a Mac:
//     go test -exec "$PWD/packaging/go-test-exec.sh" ./vm/vz
//   - Info.plist.extra and package-macos.sh: the bundle keys `fyne package`
//     does not write (LSUIElement for a menu-bar app, the minimum macOS, the
//     bundle ID of FyneApp.toml, the copyright), merged in with plutil
//     before the bundle is signed.
//   - sandbar.desktop: the Linux desktop entry.
//   - package-linux.sh BINARY VERSION ARCH [DIR]: the Linux tarball (the
//     binary, desktop entry, icon and README, laid out like a prefix);
//     `make package` runs it on Linux, package-macos.sh on macOS.
//
// Off macOS, the test runs package-macos.sh against stand-ins for fyne,
// plutil and codesign, and checks the bundle it leaves: the merged
// Info.plist keys and exactly the virtualization entitlement.
//
// It is not a build system: the Makefile calls these scripts.
package packaging

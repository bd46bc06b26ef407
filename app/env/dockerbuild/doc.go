// Package dockerbuild builds a devcontainer.json's build.dockerfile inside
// a Sandbar VM, never on the host, and keeps the result as an image like a
// pulled one (app/env/ociimage), cached by what went into it.
//
// The host reads the Dockerfile's FROM lines (ARG-substituted, multi-stage)
// and pulls those images itself, with the person's credentials and proxy;
// it hands them to the VM as archives over the exec channel, and writes a
// copy of the Dockerfile whose FROM lines name them as loaded. In the VM,
// buildah from Debian's archive runs as root with chroot isolation, vfs
// storage and --pull=never: the VM needs no registry and no credential.
// Its RUN steps reach the network the caller gives the VM (a session's,
// under the project's rules). The builder pushes the result as an OCI
// archive that the host reads back as hostile data: only the files an OCI
// layout has, each blob checked against its digest, sizes bounded, then
// the same conversion as a pulled image's layers.
//
// It is not a general Docker front end: heredocs, `# syntax=` frontends,
// FROM --platform of another architecture, RUN --mount from an image and
// COPY --from an image named through a variable are refused with words
// (see Parse).
package dockerbuild

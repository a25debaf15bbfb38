// Package docker runs every probe in a Docker container through the Engine
// API (github.com/docker/docker/client, API version negotiated, so Docker
// 20.10 and later), with the same policy as the embedded runtime applied
// through HostConfig: read-only root, no network, size-capped tmpfs, no
// capabilities, no-new-privileges, Docker's default seccomp profile, pids,
// memory and CPU limits, a non-root user, the environment allow-list. The
// probe image comes from images/; the interpreter is the image's.
//
// It is not a general Docker client: it creates, runs and removes probe
// containers labelled with their scan, and nothing else.
package docker

#!/usr/bin/env bash
# Build the nondet-sandbox probe image on a machine that reaches no container
# registry, only a Debian package mirror.
#
#   1. debootstrap a minimal Debian (bookworm) that already holds python3,
#      tzdata, locales and libfaketime, from the mirror this machine's apt
#      uses, and `docker import` it as nondet-sandbox-base:bookworm (skipped
#      when that image exists, unless FORCE=1);
#   2. `docker build` images/probe/Dockerfile on that base, as
#      nondet-sandbox-probe:latest (the worker is bound in by each scan).
#
# Needs root (for debootstrap) and a running Docker engine. Runs without a
# terminal (CI). Progress goes to stderr; the probe image's id is the one line
# written to stdout.
#
# Environment:
#   FORCE=1          rebuild the base image even when it exists
#   MIRROR=URL       use this Debian mirror instead of the one apt uses
#   DOCKER_BUILDKIT  left as given; when unset and `docker buildx` is missing,
#                    the classic builder is used (DOCKER_BUILDKIT=0)
#   TMPDIR           where the temporary root file system is made (must allow
#                    exec and device nodes: not a noexec/nodev mount)
set -euo pipefail

SUITE=bookworm
BASE_IMAGE="nondet-sandbox-base:$SUITE"
PROBE_IMAGE="${PROBE_IMAGE:-nondet-sandbox-probe:latest}"
FALLBACK_MIRROR="http://deb.debian.org/debian"
INCLUDE="python3,tzdata,locales,libfaketime"

log() { printf 'build-offline: %s\n' "$*" >&2; }
die() { printf 'build-offline: error: %s\n' "$*" >&2; exit 1; }

ROOT="$(cd "$(dirname "$0")/.." && pwd -P)"
DOCKERFILE="$ROOT/images/probe/Dockerfile"
[ -f "$DOCKERFILE" ] || die "missing $DOCKERFILE"

# ---------------------------------------------------------------- cleanup

ROOTFS=""
CONTEXT=""

# Unmount anything left mounted under $1 (debootstrap mounts proc and sys in
# the target and may leave them behind when it fails), deepest first.
umount_under() {
	local d="$1" m
	[ -r /proc/mounts ] || return 0
	awk -v d="$d" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts |
		sort -r |
		while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done
}

cleanup() {
	if [ -n "$ROOTFS" ] && [ -d "$ROOTFS" ]; then
		umount_under "$ROOTFS"
		rm -rf --one-file-system "$ROOTFS"
	fi
	if [ -n "$CONTEXT" ] && [ -d "$CONTEXT" ]; then
		rm -rf "$CONTEXT"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- docker

command -v docker >/dev/null 2>&1 ||
	die "no docker client on PATH (Debian: apt-get install docker.io)"
if ! docker info >/dev/null 2>&1; then
	die "no running Docker engine answers 'docker info'. Start one, e.g.:
    apt-get install -y docker.io    # if dockerd is missing
    dockerd >/var/log/dockerd.log 2>&1 &
    until docker info >/dev/null 2>&1; do sleep 1; done"
fi

if [ -z "${DOCKER_BUILDKIT:-}" ] && ! docker buildx version >/dev/null 2>&1; then
	log "docker buildx is not installed: using the classic builder (DOCKER_BUILDKIT=0)"
	export DOCKER_BUILDKIT=0
fi

# ---------------------------------------------------------------- mirror

# The first Debian mirror in apt's sources that serves $SUITE itself (not
# $SUITE-updates or -security), from one-line .list files and deb822
# .sources files alike; schemes debootstrap can't use are skipped.
apt_mirror() {
	local f
	{
		for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[ -r "$f" ] || continue
			awk -v suite="$SUITE" '
				{ sub(/#.*/, "") }
				$1 != "deb" { next }
				{
					line = $0
					sub(/^[ \t]*deb[ \t]+/, "", line)
					if (line ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "", line)
					n = split(line, w, /[ \t]+/)
					if (n >= 2 && w[2] == suite) print w[1]
				}' "$f"
		done
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -r "$f" ] || continue
			awk -v suite="$SUITE" '
				function flush() {
					if (uris != "" && enabled != "no" && types ~ /(^| )deb( |$)/ &&
					    (" " suites " ") ~ (" " suite " ")) {
						n = split(uris, u, " ")
						for (i = 1; i <= n; i++) print u[i]
					}
					types = ""; uris = ""; suites = ""; enabled = ""; key = ""
				}
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				/^[ \t]/ {  # continuation of a multi-line field
					v = $0; gsub(/^[ \t]+|[ \t]+$/, "", v)
					if (key == "uris") uris = uris " " v
					else if (key == "suites") suites = suites " " v
					else if (key == "types") types = types " " v
					next
				}
				{
					key = tolower($0); sub(/:.*/, "", key)
					v = $0; sub(/^[^:]*:[ \t]*/, "", v); gsub(/[ \t]+$/, "", v)
					if (key == "types") types = v
					else if (key == "uris") uris = v
					else if (key == "suites") suites = v
					else if (key == "enabled") enabled = tolower(v)
				}
				END { flush() }' "$f"
		done
	} | grep -E '^(https?|ftp|file):' | head -n 1 || true
}

# ---------------------------------------------------------------- base image

base_exists() { docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; }
image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }

# The images these tags name now: dropped at the end if a rebuild replaced
# them and nothing else uses them, so that repeated runs don't pile up.
OLD_PROBE_ID="$(image_id "$PROBE_IMAGE")"
OLD_BASE_ID="$(image_id "$BASE_IMAGE")"

T_DEBOOTSTRAP="(cached)"
T_IMPORT="(cached)"
if base_exists && [ "${FORCE:-0}" != 1 ]; then
	log "$BASE_IMAGE exists: reusing it (FORCE=1 rebuilds it)"
else
	[ "$(id -u)" = 0 ] || die "debootstrap needs root; run as root (or build $BASE_IMAGE elsewhere)"

	if ! command -v debootstrap >/dev/null 2>&1; then
		log "installing debootstrap with apt-get"
		apt-get update >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			debootstrap debian-archive-keyring >&2
	fi

	mirror="${MIRROR:-}"
	if [ -z "$mirror" ]; then
		mirror="$(apt_mirror)"
		if [ -n "$mirror" ]; then
			log "mirror from apt's sources: $mirror"
		else
			mirror="$FALLBACK_MIRROR"
			log "no $SUITE mirror found in apt's sources: falling back to $mirror"
		fi
	else
		log "mirror from MIRROR: $mirror"
	fi

	ROOTFS="$(mktemp -d "${TMPDIR:-/tmp}/nds-debootstrap.XXXXXX")"
	keyring=()
	if [ -r /usr/share/keyrings/debian-archive-keyring.gpg ]; then
		keyring=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
	fi

	log "debootstrap $SUITE into $ROOTFS (with $INCLUDE)"
	t0=$SECONDS
	DEBIAN_FRONTEND=noninteractive debootstrap --variant=minbase \
		--include="$INCLUDE" "${keyring[@]}" \
		"$SUITE" "$ROOTFS" "$mirror" >&2 ||
		die "debootstrap failed (see above; the mirror was $mirror)"
	T_DEBOOTSTRAP="$((SECONDS - t0))s"
	umount_under "$ROOTFS"

	# Keep the image small, and keep this machine's own files out of it
	# (Docker supplies resolv.conf, hostname and hosts at run time).
	rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/cache/apt/*.bin \
		"$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/log/*.log \
		"$ROOTFS"/debootstrap
	: >"$ROOTFS/etc/resolv.conf"
	echo localhost >"$ROOTFS/etc/hostname"

	log "importing $BASE_IMAGE"
	t0=$SECONDS
	tar --numeric-owner -C "$ROOTFS" -c . |
		docker import \
			-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			-c 'ENV LANG=C.UTF-8' \
			-c 'CMD ["python3"]' \
			-m "debootstrap --variant=minbase --include=$INCLUDE $SUITE" \
			- "$BASE_IMAGE" >&2
	T_IMPORT="$((SECONDS - t0))s"

	umount_under "$ROOTFS"
	rm -rf --one-file-system "$ROOTFS"
	ROOTFS=""
fi

# ---------------------------------------------------------------- probe image

CONTEXT="$(mktemp -d "${TMPDIR:-/tmp}/nds-image-context.XXXXXX")"

log "building $PROBE_IMAGE on $BASE_IMAGE"
t0=$SECONDS
docker build --build-arg "BASE=$BASE_IMAGE" -t "$PROBE_IMAGE" \
	-f "$DOCKERFILE" "$CONTEXT" >&2
T_BUILD="$((SECONDS - t0))s"

id="$(image_id "$PROBE_IMAGE")"
[ -n "$id" ] || die "docker build left no $PROBE_IMAGE"
if [ -n "$OLD_PROBE_ID" ] && [ "$OLD_PROBE_ID" != "$id" ]; then
	docker rmi "$OLD_PROBE_ID" >/dev/null 2>&1 || true
fi
if [ -n "$OLD_BASE_ID" ] && [ "$OLD_BASE_ID" != "$(image_id "$BASE_IMAGE")" ]; then
	docker rmi "$OLD_BASE_ID" >/dev/null 2>&1 || true
fi
size="$(docker image inspect -f '{{.Size}}' "$PROBE_IMAGE")"
log "done: debootstrap $T_DEBOOTSTRAP, import $T_IMPORT, build $T_BUILD; $PROBE_IMAGE is $((size / 1000000)) MB"
printf '%s\n' "$id"

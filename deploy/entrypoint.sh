#!/bin/sh
# Reads the bearer token from a file when TRL_AUTH_TOKEN_FILE names one
# (compose and Kubernetes secrets are files), then runs trl. trl moves every
# TRL_* variable out of its environment at start-up, so commands in its
# sessions cannot read the token from /proc.
set -eu
if [ -n "${TRL_AUTH_TOKEN_FILE:-}" ] && [ -z "${TRL_AUTH_TOKEN:-}" ]; then
  TRL_AUTH_TOKEN="$(cat "$TRL_AUTH_TOKEN_FILE")"
  export TRL_AUTH_TOKEN
fi
# TRL_CGROUP_WRITABLE=1 (the --isolate variants set it): container runtimes
# mount the container's cgroup v2 tree read-only; remount it read-write so
# that trl can make a group per session and set its limits. Only the
# container's own subtree is visible (a private cgroup namespace), and the
# remount needs CAP_SYS_ADMIN. Without it trl still runs: sessions are then
# cleaned up by /proc scans and per-session limits are refused.
if [ "${TRL_CGROUP_WRITABLE:-}" = 1 ] && [ -d /sys/fs/cgroup ] && [ ! -w /sys/fs/cgroup ]; then
  mount -o remount,rw /sys/fs/cgroup 2>/dev/null \
    || echo "trl-entrypoint: could not remount /sys/fs/cgroup read-write (needs CAP_SYS_ADMIN and a private cgroup namespace): no per-session cgroups" >&2
fi
exec trl "$@"

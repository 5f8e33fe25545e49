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
exec trl "$@"

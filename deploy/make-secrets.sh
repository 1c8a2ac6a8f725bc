#!/bin/sh
# Creates the secrets deploy/docker-compose.yml mounts, once: a P-256 token-signing key
# and the bootstrap admin's client secret, in deploy/secrets/ (git-ignored, mode 0600).
# Prints the admin's credentials; run it again and it keeps the existing files.
#   deploy/make-secrets.sh && docker compose -f deploy/docker-compose.yml up --build
set -eu
dir=$(cd "$(dirname "$0")" && pwd)/secrets
umask 077
mkdir -p "$dir"
if [ ! -f "$dir/signing-key.pem" ]; then
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/signing-key.pem"
	echo "created $dir/signing-key.pem"
fi
if [ ! -f "$dir/bootstrap-secret" ]; then
	openssl rand -base64 32 | tr -d '\n=' | tr '+/' '-_' >"$dir/bootstrap-secret"
	echo "created $dir/bootstrap-secret"
fi
# The container runs as uid 10001; Compose mounts these files with their own mode.
chmod 0644 "$dir/signing-key.pem" "$dir/bootstrap-secret" 2>/dev/null || true
echo "admin client_id: admin"
echo "admin client_secret: $(cat "$dir/bootstrap-secret")"

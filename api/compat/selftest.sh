#!/bin/sh
# Proves that `buf breaking` against api/compat/ringcast-v1.binpb guards the
# v1 API: in a scratch copy of api/, an additive change (a new field and a
# new RPC) passes, and renumbering a field (a wire break) fails.
# Run from the repository root (go tool task lint runs it).
set -eu
BUF=${BUF:-node_modules/.bin/buf}
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/api" "$tmp/deps"
cp -R api/ringcast "$tmp/api/"
cp -R .deps/protovalidate/. "$tmp/deps/"
cat >"$tmp/buf.yaml" <<'YAML'
version: v2
modules:
  - path: api
  - path: deps
breaking:
  use:
    - FILE
YAML
proto="$tmp/api/ringcast/v1/ringcast.proto"
check() { (cd "$tmp" && "$root/$BUF" breaking api --against "$root/api/compat/ringcast-v1.binpb"); }

# Additive: a new field in ServerStatus and a new RPC.
cp "$proto" "$tmp/orig.proto"
sed -i 's/^message ServerStatus {$/message ServerStatus {\n  string selftest_added = 999;/' "$proto"
sed -i 's/^service EventService {$/service EventService {\n  rpc SelftestAdded(GetServerStatusRequest) returns (GetServerStatusResponse);/' "$proto"
grep -q selftest_added "$proto" && grep -q SelftestAdded "$proto"
check || { echo "buf breaking rejected an additive change" >&2; exit 1; }

# Breaking: ServerStatus.server_version moves from field 3 to 33.
cp "$tmp/orig.proto" "$proto"
sed -i 's/^  string server_version = 3;$/  string server_version = 33;/' "$proto"
grep -q 'server_version = 33;' "$proto"
if out=$(check 2>&1); then
  echo "buf breaking accepted renumbering ServerStatus.server_version" >&2
  exit 1
fi
echo "$out" | grep -q 'server_version' || { echo "unexpected buf breaking output: $out" >&2; exit 1; }
echo "buf breaking: additive change accepted, renumbered field rejected"

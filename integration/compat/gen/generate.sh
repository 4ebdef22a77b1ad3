#!/usr/bin/env bash
# Writes the stored-state fixture set of a release with that release's own
# code: integration/compat/testdata/<commit>/{store.tar.gz,manifest.json}.
#
#   integration/compat/gen/generate.sh [COMMIT]     # default HEAD
#
# The commit's tree is exported (git archive) into a temporary directory,
# this generator and package fixture are copied into it, and the generator
# runs there, against that commit's fleet, dispatcher, worker and embedded
# nats-server. Nothing of the working tree but those two directories is
# compiled. Add the set's README.md by hand (see testdata/6707540/README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel)"
commit="$(git -C "$repo" rev-parse --short=7 "${1:-HEAD}^{commit}")"
out="$repo/integration/compat/testdata/$commit"
if [ -e "$out/store.tar.gz" ]; then
  echo "$out exists: a committed fixture set is what its release wrote and is never regenerated (delete it first if it was never committed)" >&2
  exit 1
fi
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
git -C "$repo" archive "$commit" | tar -x -C "$src"
rm -rf "$src/integration/compat/fixture" "$src/integration/compat/gen"
mkdir -p "$src/integration/compat"
cp -r "$repo/integration/compat/fixture" "$repo/integration/compat/gen" "$src/integration/compat/"
(cd "$src" && GOWORK=off GOFLAGS=-buildvcs=false go run -tags compatgen ./integration/compat/gen -release "$commit" -out "$out")
ls -l "$out"

#!/usr/bin/env bash
# netsim as a user installs it: packs every public package (`pnpm pack:all`), creates an empty
# project outside the workspace, installs the tarballs with npm and runs there a plain-JavaScript
# node:test file, require(esm) from CommonJS, strict tsc with moduleResolution NodeNext, Node16
# and Bundler, a vitest file with the matchers, and the installed `netsim` CLI.
#
# The @netsim scope points at an unreachable registry during the install and the install log is
# searched for it: the tarballs must resolve each other without looking any @netsim name up.
# Prints one `outside: ok|FAIL <check>` line per check and `outside: N passed, N failed`; with
# OUTSIDE_COUNTS=FILE it also writes "N M" there (.ci/run adds them to the suite's count).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/netsim-outside-XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
n=0

# check NAME COMMAND...: runs COMMAND in the project, counts it, shows its output when it fails.
check() {
  local name=$1
  shift
  n=$((n + 1))
  if (cd "$work/project" && "$@") >"$work/log.$n" 2>&1; then
    echo "outside: ok   $name"
    passed=$((passed + 1))
  else
    echo "outside: FAIL $name"
    tail -n 40 "$work/log.$n" | sed 's/^/  | /'
    failed=$((failed + 1))
  fi
}

finish() {
  echo "outside: $passed passed, $failed failed"
  if [ -n "${OUTSIDE_COUNTS:-}" ]; then echo "$passed $failed" >"$OUTSIDE_COUNTS"; fi
  [ "$failed" = 0 ]
  exit $?
}

n=$((n + 1))
if (cd "$root" && pnpm pack:all "$work/tarballs") >"$work/log.pack" 2>&1; then
  echo "outside: ok   pnpm pack:all writes one tarball per public package"
  passed=$((passed + 1))
else
  echo "outside: FAIL pnpm pack:all"
  tail -n 40 "$work/log.pack" | sed 's/^/  | /'
  failed=$((failed + 1))
  finish
fi

mkdir -p "$work/project"
cp "$here"/project/* "$work/project/"
printf '{ "name": "outside", "private": true, "type": "module" }\n' >"$work/project/package.json"
mkdir -p "$work/project/empty"

ts_version=$(node -p "require('$root/node_modules/typescript/package.json').version")
vitest_version=$(node -p "require('$root/node_modules/vitest/package.json').version")
install() {
  npm i --no-audit --no-fund --loglevel=http --fetch-retries=0 --@netsim:registry=http://127.0.0.1:9/ \
    "$work"/tarballs/*.tgz "typescript@$ts_version" "vitest@$vitest_version" "@types/node@^20" >"$work/npm.log" 2>&1 || { cat "$work/npm.log"; return 1; }
  if grep -n '127\.0\.0\.1:9' "$work/npm.log"; then echo "npm looked an @netsim name up on a registry"; return 1; fi
}
check "npm i tarballs/*.tgz in an empty project, no registry lookup of any @netsim name" install

check "node --test on a plain JavaScript file" node --test world.test.mjs
check "require(esm) from CommonJS" node require.cjs
check "tsc strict, moduleResolution NodeNext" npx tsc -p tsconfig.nodenext.json
check "tsc strict, moduleResolution Node16" npx tsc -p tsconfig.node16.json
check "tsc strict, moduleResolution Bundler" npx tsc -p tsconfig.bundler.json
check "vitest with @netsim/check/vitest matchers" npx vitest run matchers.test.ts
usage() { out=$(npx netsim --help) && grep -q '^Usage: netsim' <<<"$out"; }
check "npx netsim --help" usage
shipped() { out=$(npx netsim replay) && grep -Eq '^([0-9]+) of \1 scenarios met their expectations$' <<<"$out"; }
check "npx netsim replay (the scenarios shipped with the CLI)" shipped
own() { out=$(npx netsim replay node_modules/@netsim/cli/dist/scenarios/npl-multi-port-cleanup-fixed.yaml) && grep -q '^1 of 1 scenario met its expectation$' <<<"$out"; }
check "npx netsim replay FILE (from the user's directory)" own
schema() { f=node_modules/@netsim/cli/dist/scenarios/npl-multi-port-cleanup-fixed.yaml; s=$(sed -n '1s/^# yaml-language-server: \$schema=//p' "$f"); [ -n "$s" ] && [ -f "$(dirname "$f")/$s" ]; }
check "the shipped scenarios point editors at the installed schema" schema
none() { npx netsim replay empty; [ $? = 2 ]; }
check "npx netsim replay DIR without scenarios exits 2" none
finish

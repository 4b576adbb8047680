#!/usr/bin/env bash
# The CI steps, one function each, shared by .ci/run (everything, on a clean clone) and
# .github/workflows/ci.yml (pull requests: only what the change affects; main: everything).
# Usage: .ci/steps.sh <step> [<step> …]
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_DAEMON=false NX_NO_CLOUD=true CI=true

# The README's set-up: npm ci, under Node 22 from the npm registry when the machine's is older.
install() {
  npm run setup
}

# The machine's PostgreSQL when one answers (faster); npm test falls back to the embedded server.
use_local_postgres() {
  if [ -z "${DATABASE_URL:-}" ] && pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres
  fi
}

# The TypeScript project references match the project graph (`nx sync` writes them; in CI Nx
# skips that check before tasks, so it is made here), the import rules between and inside projects
# (dependency-cruiser: no cycles, libs/domain's folder stack), Squawk on the migrations from 0013 on
# (docs/migrations.md), then every project's lint, typecheck and build.
checks() {
  npx nx sync:check
  npm run lint:dependencies
  npm run lint:migrations
  npx nx run-many -t lint typecheck build --outputStyle=static
}

# Only the projects a change affects, against the merge base (NX_BASE/NX_HEAD, as nrwl/nx-set-shas
# sets them); the docs project's drift-check runs when the generator, the CLI's types or docs/ changed.
affected() {
  use_local_postgres
  npx nx sync:check
  npm run lint:dependencies
  npm run lint:migrations
  npx nx affected -t lint typecheck build test drift-check --base="${NX_BASE:?NX_BASE}" --head="${NX_HEAD:-HEAD}" --outputStyle=static
}

# The committed OpenAPI/AsyncAPI/Postman/client types/docs are what the code generates; redocly lint.
drift() {
  npm run openapi:check
}

# The project graph makes "affected" right: sample changes staged in a temporary worktree.
affected_graph() {
  npx tsx tools/ci/affected-graph.ts
}

# newman and the typed-client quickstart, end to end, each against the service on a fresh database.
partner_flows() {
  use_local_postgres
  npm run postman:run
  npm run quickstart:run
}

# `npm start` on the embedded default (no DATABASE_URL), one authenticated call.
quickstart_boot() {
  env -u DATABASE_URL bash .ci/smoke-start.sh
}

for step in "$@"; do
  echo "== $step"
  "$step"
done

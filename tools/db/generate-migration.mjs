#!/usr/bin/env node
// `npm run db:generate -- --name <what_it_does> [--custom]`: drizzle-kit's generate, with the name
// the repository's convention asks for. Without --name drizzle-kit picks a random one
// (`0013_slimy_silvermane`), which says nothing in a migration list; this refuses that.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const usage = 'usage: npm run db:generate -- --name <what_it_does> [--custom]\n  --name    snake_case, says what the migration does (e.g. add_order_source)\n  --custom  an empty migration to write by hand (a backfill, a VALIDATE CONSTRAINT)\nSee docs/migrations.md.';
let values;
try {
  ({ values } = parseArgs({ options: { name: { type: 'string' }, custom: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } } }));
} catch (error) {
  console.error(`${error.message}\n${usage}`);
  process.exit(2);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
if (!values.name || !/^[a-z][a-z0-9]*(_[a-z0-9]+)+$/.test(values.name)) {
  console.error(`${values.name ? `--name ${JSON.stringify(values.name)} is not a descriptive snake_case name (two words or more)` : '--name is required'}\n${usage}`);
  process.exit(2);
}
const args = ['drizzle-kit', 'generate', '--config', 'libs/db/drizzle.config.ts', '--name', values.name, ...(values.custom ? ['--custom'] : [])];
const result = spawnSync('npx', args, { stdio: 'inherit' });
process.exit(result.status ?? 1);

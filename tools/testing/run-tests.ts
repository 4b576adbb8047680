// `npm test`: every project's tests against one PostgreSQL server — DATABASE_URL when set,
// otherwise the embedded default, started once here so parallel projects share it (each test
// run still creates its own fresh database on it).
import { spawn } from 'node:child_process';
import { locateDatabase } from '@lop/db';
import { loadConfig } from '@lop/domain';
import { clearReports, formatFailures, readFailures, REPORT_FILE, testProjectRoots } from './failure-summary';

const config = loadConfig();
const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
console.log(`tests use ${location.source === 'url' ? 'DATABASE_URL' : 'the embedded PostgreSQL'}`);

const projects = testProjectRoots(process.cwd());
clearReports(projects);
// Each project's vitest also writes a JSON report (its root's test-artifacts/), read back below.
const args = ['nx', 'run-many', '-t', 'test', '--outputStyle=stream', ...process.argv.slice(2), '--', '--reporter=default', '--reporter=json', `--outputFile.json=${REPORT_FILE}`];
const child = spawn('npx', args, {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: location.url, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
});
const code = await new Promise<number>((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
await location.stop();
if (code !== 0) {
  const { failures, unreported } = readFailures(projects);
  console.log(`\n== what failed (${failures.length} from the projects' vitest reports)`);
  if (failures.length > 0) console.log(formatFailures(failures));
  if (unreported.length > 0) console.log(`no report (not run, or stopped before it reported): ${unreported.join(', ')}`);
}
process.exit(code);

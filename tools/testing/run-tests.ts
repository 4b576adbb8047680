// `npm test`: every project's tests against one PostgreSQL server — DATABASE_URL when set,
// otherwise the embedded default, started once here so parallel projects share it (each test
// run still creates its own fresh database on it).
import { spawn } from 'node:child_process';
import { locateDatabase } from '@lop/db';
import { loadConfig } from '@lop/domain';

const config = loadConfig();
const location = await locateDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.PARTNER_DATA_DIR, embeddedPort: config.PARTNER_EMBEDDED_PG_PORT });
console.log(`tests use ${location.source === 'url' ? 'DATABASE_URL' : 'the embedded PostgreSQL'}`);

const args = ['nx', 'run-many', '-t', 'test', '--outputStyle=stream', ...process.argv.slice(2)];
const child = spawn('npx', args, {
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: location.url, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
});
const code = await new Promise<number>((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
await location.stop();
process.exit(code);

// postinstall: fixes postgres.js 3.4.9 for a connection that closes in the middle of a transaction
// (database restart, failover, network cut). Found by apps/partner-api/src/reliability/database-outage.test.ts.
//
// Upstream: porsager/postgres issues #1066, #1154, #1208, #1216; pull requests #1168, #1209, #1215 (not
// released as of 3.4.9). Without this:
//  1. sql.begin() issues its own ROLLBACK on the dead connection; the write runs from setImmediate on a
//     null socket and throws an uncatchable TypeError that kills the process.
//  2. closed() leaves a stale write timer and buffer behind, so the reconnected connection never sends
//     its startup message and ends in CONNECT_TIMEOUT, again and again.
//  3. A transaction's later statements could run on the reconnected session, outside the transaction.
// The fix: writes on a closed connection reject their queries with CONNECTION_CLOSED; closed() clears
// the pending write; a transaction rejects every statement issued after its connection closed.
//
// Idempotent; a postgres.js version without the original text is left alone (with a notice).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARKER = '/* lop-patch: closed-connection */';
const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const packageDir = join(root, 'node_modules/postgres');

const patches = {
  'connection.js': [
    [
      `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`,
      `  function nextWrite(fn) {
    ${MARKER}
    if (!socket) {
      // Closed before this write went out: its queries fail like the others on this connection.
      nextWriteTimer !== null && clearImmediate(nextWriteTimer)
      chunk = nextWriteTimer = null
      error(Errors.connection('CONNECTION_CLOSED', options))
      return false
    }
    const x = socket.write(chunk, fn)`,
    ],
    [
      `    incomings = null
    clearImmediate(nextWriteTimer)
    socket.removeListener('data', data)`,
      `    incomings = null
    clearImmediate(nextWriteTimer)
    ${MARKER}
    chunk = nextWriteTimer = null
    socket.removeListener('data', data)`,
    ],
  ],
  'index.js': [
    [
      `      return await Promise.race([
        scope(connection, fn),
        new Promise((_, reject) => connection.onclose = reject)
      ])`,
      `      return await Promise.race([
        scope(connection, fn),
        ${MARKER}
        new Promise((_, reject) => connection.onclose = (e) => (closedError = e || Errors.connection('CONNECTION_CLOSED', options), reject(e)))
      ])`,
    ],
    [
      `    let savepoints = 0
      , connection
      , prepare = null`,
      `    let savepoints = 0
      , connection
      , prepare = null
      , closedError = null ${MARKER}`,
    ],
    [
      `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        c.queue === full`,
      `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        ${MARKER}
        if (closedError)
          return q.reject(closedError)
        c.queue === full`,
    ],
  ],
};

if (!existsSync(packageDir)) process.exit(0);
let applied = 0;
for (const variant of ['src', 'cjs/src', 'cf/src']) {
  for (const [file, replacements] of Object.entries(patches)) {
    const path = join(packageDir, variant, file);
    if (!existsSync(path)) continue;
    let text = readFileSync(path, 'utf8');
    if (text.includes(MARKER)) continue;
    if (!replacements.every(([from]) => text.includes(from))) {
      console.warn(`postgres.js patch: ${variant}/${file} differs from 3.4.9; not patched (check whether the upstream fix is released)`);
      continue;
    }
    for (const [from, to] of replacements) text = text.replace(from, to);
    writeFileSync(path, text);
    applied++;
  }
}
if (applied > 0) console.log(`postgres.js patch: closed-connection fix applied to ${applied} file(s)`);

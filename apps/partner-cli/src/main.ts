import { CommanderError } from 'commander';
import { ApiError, UnreachableError, UsageError } from './api';
import { colourAllowed, processOutput } from './output';
import { buildProgram, type Run } from './program';

/**
 * The `lop` process: parse, run one command, print an error the way the API reports it, exit
 * 0 (success), 1 (failure) or 2 (usage). Ctrl-C asks a long-running command to stop at a safe
 * point (it then prints its cursor); a second Ctrl-C exits at once with the last safe cursor.
 */

const output = processOutput();
const run: Run = { exitCode: 0, stop: new AbortController(), cursor: null, json: false };
const errStyle = processOutput().style;
const red = (text: string) => (colourAllowed(process.stderr) ? errStyle.red(text) : text);

// `lop events tail | head`: a reader that went away is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(run.exitCode);
    throw error;
  });
}

process.on('SIGINT', () => {
  if (!run.stop.signal.aborted) return run.stop.abort();
  if (run.cursor) process.stderr.write(`interrupted; resume from cursor ${run.cursor}\n`);
  process.exit(1);
});

function printError(error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander has printed the message (or the help) already.
    return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? 0 : 2;
  }
  if (error instanceof ApiError) {
    if (run.json) process.stderr.write(`${JSON.stringify(error.body ?? { error: { code: error.code, message: error.message }, request_id: error.requestId })}\n`);
    else {
      process.stderr.write(`${red(`error: ${error.code}`)}: ${error.message}${error.requestId ? ` (request_id ${error.requestId})` : ''}\n`);
      for (const detail of error.details) process.stderr.write(`  ${[detail.field, detail.issue].filter(Boolean).join(': ')}\n`);
    }
    return 1;
  }
  const code = error instanceof UsageError ? error.code : error instanceof UnreachableError ? 'unreachable' : 'failed';
  const message = error instanceof Error ? error.message : String(error);
  if (run.json) process.stderr.write(`${JSON.stringify({ error: { code, message }, request_id: null })}\n`);
  else process.stderr.write(`${red(`error: ${code}`)}: ${message}\n`);
  return error instanceof UsageError ? 2 : 1;
}

let exitCode: number;
try {
  await buildProgram(output, run).parseAsync(process.argv);
  exitCode = run.exitCode;
} catch (error) {
  exitCode = printError(error);
}
// Exit by draining (stdout may be a slow pipe); should anything linger, leave anyway shortly after.
process.exitCode = exitCode;
setTimeout(() => process.exit(exitCode), 2_000).unref();

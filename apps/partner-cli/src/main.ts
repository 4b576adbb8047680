import { CommanderError } from 'commander';
import { ApiError, UnreachableError, UsageError } from './api';
import { colourAllowed, processOutput } from './output';
import { buildProgram, type Run } from './program';

/**
 * The `lop` process: parse, run one command, print an error the way the API reports it, exit
 * 0 (success), 1 (failure) or 2 (usage). Ctrl-C, SIGTERM (a process manager, `kill`) and SIGHUP
 * (the terminal closed) ask a long-running command to stop at a safe point (it then prints its
 * cursor and the command line to resume with); a second one exits at once with the last safe cursor.
 */

const output = processOutput();
const run: Run = { exitCode: 0, stop: new AbortController(), cursor: null, resume: null, json: false };
const errStyle = processOutput().style;
const red = (text: string) => (colourAllowed(process.stderr) ? errStyle.red(text) : text);

// `lop events tail | head`: a reader that went away is not an error; nor is a terminal that closed (EIO, after SIGHUP).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'EIO') process.exit(run.exitCode);
    throw error;
  });
}

/** Where to go on from, for an exit the command could not summarise itself. */
const resumeNote = () => (run.cursor ? `resume from cursor ${run.cursor}${run.resume ? `: ${run.resume(run.cursor)}` : ''}\n` : '');

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (!run.stop.signal.aborted) return run.stop.abort();
    process.stderr.write(`interrupted; ${resumeNote() || 'no cursor yet\n'}`);
    process.exit(1);
  });
}

function printError(error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander has printed the message (or the help) already. Its exit code is 0 for --help,
    // `lop help <command>` and --version alike; anything else it refuses is usage.
    return error.exitCode === 0 ? 0 : 2;
  }
  // A follow that failed for good (a revoked key) still says where it got to.
  if (run.cursor && run.resume) process.stderr.write(resumeNote());
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
  // A value the service refused (a cursor): its own envelope, request_id and all.
  if (run.json && error instanceof UsageError && error.body !== undefined && error.body !== null) process.stderr.write(`${JSON.stringify(error.body)}\n`);
  else if (run.json) process.stderr.write(`${JSON.stringify({ error: { code, message }, request_id: null })}\n`);
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

import { Option } from 'commander';

export interface OutputOptions {
  json?: boolean;
}

/** Every command takes --json: one JSON document on stdout, nothing else there. */
export function jsonOption(): Option {
  return new Option('--json', 'print one JSON document on stdout instead of readable text');
}

/** Prints the command's result as JSON or as the command's readable text. */
export function print<T>(result: T, options: OutputOptions, readable: (result: T) => string): void {
  process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : `${readable(result).trimEnd()}\n`);
}

/** Aligned `label  value` lines. */
export function fields(rows: [label: string, value: string][], indent = '  '): string {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${indent}${label.padEnd(width)}  ${value}`).join('\n');
}

/** A plain text table; `empty` is printed instead when there are no rows. */
export function table<T>(rows: T[], columns: [heading: string, value: (row: T) => string][], empty: string): string {
  if (rows.length === 0) return empty;
  const cells = [columns.map(([heading]) => heading), ...rows.map((row) => columns.map(([, value]) => value(row)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  return cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')).join('\n');
}

/** A mistake in how the command was called (as opposed to a failure while running it): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Error text on one line, so scripts can show or log it as is. */
export function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

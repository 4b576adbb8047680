import { styleText } from 'node:util';

/**
 * Where a command writes, and whether it may colour it: only a terminal gets colours, never a
 * pipe or a file; NO_COLOR turns them off and FORCE_COLOR on (https://no-color.org).
 */
export interface Output {
  out(line: string): void;
  err(line: string): void;
  style: Styles;
}

type Style = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'cyan';
export type Styles = Record<Style, (text: string) => string>;

export function colourAllowed(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== '0') return true;
  return Boolean(stream.isTTY) && env.TERM !== 'dumb';
}

function styles(enabled: boolean): Styles {
  const make = (style: Style) => (text: string) => (enabled ? styleText(style, text) : text);
  return { bold: make('bold'), dim: make('dim'), red: make('red'), green: make('green'), yellow: make('yellow'), cyan: make('cyan') };
}

export function processOutput(): Output {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    style: styles(colourAllowed(process.stdout)),
  };
}

/** The visible width of text that may carry colour codes. */
const width = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '').length; // eslint-disable-line no-control-regex

/** Left-aligned columns, a header row, two spaces between columns. */
export function table(style: Styles, headers: string[], rows: string[][]): string[] {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => width(row[column] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell + ' '.repeat(widths[column] - width(cell))))
      .join('  ')
      .trimEnd();
  return [style.bold(line(headers)), ...rows.map(line)];
}

/** `key  value` pairs, keys aligned. */
export function fields(style: Styles, pairs: [string, string][]): string[] {
  const keyWidth = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${style.dim(key.padEnd(keyWidth))}  ${value}`);
}

/** HH:MM:SS.mmm in local time: a delivery line's clock. */
export function clock(date = new Date()): string {
  const pad = (n: number, size = 2) => String(n).padStart(size, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

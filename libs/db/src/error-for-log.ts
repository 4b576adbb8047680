/**
 * Fields a failed query carries that can hold what a request sent (external identifiers,
 * encrypted patient data, values PostgreSQL refused): postgres.js's `query`, `parameters`,
 * `args` and `types`, drizzle's `params` (and `query`), and PostgreSQL's `detail` and `where`,
 * which quote key and parameter values. None of them is needed to find a fault: the SQLSTATE,
 * the PostgreSQL message and the stack are.
 */
const WITHHELD_FIELDS = new Set(['query', 'parameters', 'params', 'args', 'types', 'detail', 'where']);

const WITHHELD_QUERY = 'Failed query (statement and parameters withheld from logs)';

const isErrorLike = (value: unknown): value is Error => value !== null && typeof value === 'object' && typeof (value as { message?: unknown }).message === 'string';

/** PostgreSQL's SQLSTATE: five characters. */
const sqlstateOf = (error: Error) => {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

/** What `error` may say in a log, when its own message cannot be logged as it is. */
function safeMessage(error: Error): string {
  const query = (error as { query?: unknown }).query;
  // drizzle's query error repeats the statement and every parameter: `Failed query: <sql>\nparams: <values>`.
  if (typeof query === 'string' && query.length > 0 && error.message.includes(query)) return WITHHELD_QUERY;
  // A data exception (22) or integrity violation (23) quotes the value it refused:
  // `invalid input syntax for type integer: "<value>"`. Identifiers in other classes stay readable.
  const sqlstate = sqlstateOf(error);
  if (sqlstate && /^2[23]/.test(sqlstate)) return error.message.replace(/"(?:[^"]|"")*"/g, '"[withheld]"');
  return error.message;
}

/**
 * A copy of `error` and its causes fit for a log line: the fields above dropped, and messages
 * that repeat a query's parameters or a refused value replaced, in every wrapper that copied them
 * (tRPC copies its cause's message) and in the stacks. Anything that is not an error is returned
 * as it is.
 */
export function errorForLog(error: unknown): unknown {
  if (!isErrorLike(error)) return error;
  const chain: Error[] = [];
  for (let e: unknown = error; isErrorLike(e) && chain.length < 10 && !chain.includes(e); e = (e as { cause?: unknown }).cause) chain.push(e);
  const replacements = chain
    .map((e) => [e.message, safeMessage(e)] as const)
    .filter(([original, safe]) => original.length > 0 && original !== safe)
    .sort(([a], [b]) => b.length - a.length);
  const scrub = (text: string) => replacements.reduce((out, [original, safe]) => out.split(original).join(safe), text);
  const sqlstate = chain.map(sqlstateOf).find((code) => code !== undefined);

  let copied: Error | undefined;
  for (const original of [...chain].reverse()) {
    const copy = Object.create(Object.getPrototypeOf(original)) as Error & Record<string, unknown>;
    for (const key of Object.keys(original)) {
      if (WITHHELD_FIELDS.has(key) || key === 'cause') continue;
      const value = (original as unknown as Record<string, unknown>)[key];
      copy[key] = typeof value === 'string' ? scrub(value) : value;
    }
    // Defined, not assigned: some error classes make these read-only on the prototype.
    Object.defineProperty(copy, 'message', { value: scrub(original.message), enumerable: false, writable: true, configurable: true });
    Object.defineProperty(copy, 'stack', { value: scrub(original.stack ?? ''), enumerable: false, writable: true, configurable: true });
    if (copied) Object.defineProperty(copy, 'cause', { value: copied, enumerable: false, writable: true, configurable: true });
    copied = copy;
  }
  // A log line shows only the outermost error's fields; the cause's SQLSTATE is what finds the fault.
  if (sqlstate && copied && sqlstateOf(copied) === undefined) (copied as Error & { sqlstate?: string }).sqlstate = sqlstate;
  return copied;
}

/**
 * The one line a process prints when it cannot start: the error's message (withheld as in logs),
 * then each cause's that adds something, and the SQLSTATE — the cause an operator needs, where a
 * bare `error.message` of a wrapping error ("Failed query: …") had lost it.
 */
export function startupFailure(error: unknown): string {
  if (!isErrorLike(error)) return String(error);
  const parts: string[] = [];
  let sqlstate: string | undefined;
  for (let e: unknown = error; isErrorLike(e) && parts.length < 10; e = (e as { cause?: unknown }).cause) {
    const message = safeMessage(e);
    if (!parts.some((part) => part.includes(message))) parts.push(message);
    sqlstate ??= sqlstateOf(e);
  }
  const text = parts.join(': caused by: ');
  return sqlstate && !text.includes(sqlstate) ? `${text} (SQLSTATE ${sqlstate})` : text;
}

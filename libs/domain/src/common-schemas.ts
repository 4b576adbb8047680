import { z } from 'zod';

/** The `details[].issue` names of the checks below (docs/errors.md lists them). */
export const INPUT_ISSUES = { invalidCharacters: 'invalid_characters', outOfRange: 'out_of_range' } as const;

/**
 * What partner text may be, as whole-value patterns; the published document states them as each
 * string's `pattern`, so a client that follows it is never refused. No C0 control and no DEL: NUL
 * cannot be stored in PostgreSQL text at all, and the others have no place in an identifier or a
 * one-line value (they corrupt logs, exports and terminals downstream). No lone UTF-16 surrogate
 * (only pairs): it has no UTF-8 form, so it would be stored as U+FFFD and the value would no longer
 * be exactly as supplied. Written without the `u` flag, so they mean the same with it (JSON Schema
 * validators) and without.
 */
// eslint-disable-next-line no-control-regex -- control characters are what this excludes
export const ONE_LINE_TEXT = /^(?:[^\u0000-\u001f\u007f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;
/** Free text also keeps tab, line feed and carriage return. */
// eslint-disable-next-line no-control-regex -- control characters are what this excludes
export const FREE_TEXT = /^(?:[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;

/** True when `text` holds a character partner text may not carry (see above). */
export function hasRefusedCharacter(text: string, { multiline = false }: { multiline?: boolean } = {}): boolean {
  return !(multiline ? FREE_TEXT : ONE_LINE_TEXT).test(text);
}

/**
 * A refinement that states its rule as the JSON Schema `pattern` of every string it is attached to.
 * Zod's own string checks put their pattern in the schema's bag when attached, where its JSON
 * Schema output reads it (third-party contributions included); a refinement names none, so it is
 * added the same way. The refinement itself still judges, with its own issue name.
 */
function statingPattern<T extends z.core.$ZodCheck<string>>(check: T, pattern: RegExp): T {
  check._zod.onattach.push((schema) => {
    const bag = schema._zod.bag as { patterns?: Set<RegExp> };
    (bag.patterns ??= new Set()).add(pattern);
  });
  return check;
}

/** The character rule as a Zod check, for string schemas that need their own shape (e.g. trimmed). */
export const oneLineCharacters = statingPattern(
  z.refine<string>((text) => ONE_LINE_TEXT.test(text), {
    message: 'Control characters (including NUL) and unpaired UTF-16 surrogates are not accepted.',
    params: { issue: INPUT_ISSUES.invalidCharacters },
  }),
  ONE_LINE_TEXT,
);
export const freeTextCharacters = statingPattern(
  z.refine<string>((text) => FREE_TEXT.test(text), {
    message: 'Control characters other than tab and line breaks (including NUL) and unpaired UTF-16 surrogates are not accepted.',
    params: { issue: INPUT_ISSUES.invalidCharacters },
  }),
  FREE_TEXT,
);

/**
 * Every partner string that is stored or queried goes through one of these two, so PostgreSQL
 * never sees a value it would refuse or silently change. `textSchema`: identifiers and one-line
 * values; `freeTextSchema`: notes and answers, where line breaks are text.
 */
export const textSchema = (max: number, min = 1) => z.string().min(min).max(max).check(oneLineCharacters);
export const freeTextSchema = (max: number) => z.string().max(max).check(freeTextCharacters);

/**
 * An ISO 8601 date-time with an offset whose UTC instant falls in years 0001–9999: an offset can
 * carry a valid-looking value past either end (`9999-12-31T23:59:59-23:59`), and PostgreSQL (and
 * `Date#toISOString`) cannot take year 0 or a five-digit year.
 */
export const timestampSchema = z.iso
  .datetime({ offset: true })
  .refine(
    (text) => {
      const year = new Date(text).getUTCFullYear();
      return year >= 1 && year <= 9999;
    },
    // Only a well-formed date-time has an instant to judge; a malformed one is already invalid_format.
    { message: 'The instant, in UTC, must fall between years 0001 and 9999.', params: { issue: INPUT_ISSUES.outOfRange }, when: (payload) => payload.issues.length === 0 },
  )
  .meta({ format: 'date-time' });

/** A uuid path parameter; a malformed value answers 404 like an unknown id. */
export const pathId = (description: string) => z.uuid().meta({ description });

/** Digits only: no sign, no leading zero, no space, fraction, exponent, hex or octal prefix. */
export const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * An integer query parameter (`limit`). REST hands query values over as text, and
 * z.coerce.number() reads text the way JavaScript does: `0x10` is 16, `1e2` is 100, ` 5` is 5.
 * Here text must be plain decimal. The tRPC door sends JSON, so the value may also arrive typed:
 * a number must then be an integer in range too. Being a pipe rather than a ZodNumber also keeps
 * trpc-to-openapi from switching coercion on for it (its adapter sets `coerce` on number fields).
 */
export function queryInteger({ min, max, default: fallback }: { min: number; max: number; default: number }) {
  return (
    z
      .transform((value: unknown, ctx) => {
        const n = typeof value === 'number' ? value : typeof value === 'string' && PLAIN_DECIMAL.test(value) ? Number(value) : null;
        if (n === null) {
          ctx.issues.push({ code: 'invalid_format', format: 'regex', pattern: PLAIN_DECIMAL.source, input: String(value), message: `Send a whole number from ${min} to ${max} in plain decimal digits.` });
          return z.NEVER;
        }
        // Past the largest safe integer the pipe below would add JavaScript's own bound to ours:
        // one issue, naming this parameter's maximum, says all there is to say.
        if (n > Number.MAX_SAFE_INTEGER) {
          ctx.issues.push({ code: 'too_big', origin: 'number', maximum: max, inclusive: true, input: value, message: `Too big: expected a number <= ${max}` });
          return z.NEVER;
        }
        return n;
      })
      .pipe(z.int().min(min).max(max))
      .default(fallback)
      // A transform has no JSON Schema of its own; partners see what they may send.
      .meta({ override: { type: 'integer', minimum: min, maximum: max, default: fallback } })
  );
}

/**
 * A query parameter that takes one or more of a few names, comma-separated (`?source=rest,console`):
 * read into the list of names, each at most once. The tRPC door sends the same text. Anything else
 * (an unknown name, an empty item, a space) is `invalid_value`, with the names that are accepted.
 */
export function queryEnumList<const T extends readonly [string, ...string[]]>(values: T, description: string) {
  const name = `(?:${values.join('|')})`;
  return (
    z
      .string()
      // A pipe, which trpc-to-openapi takes as a query parameter (a bare transform it refuses).
      .transform((value, ctx) => {
        const items = value.split(',');
        if (items.some((item) => !values.includes(item))) {
          ctx.issues.push({ code: 'custom', input: value, message: `Send one or more of ${values.join(', ')}, separated by commas.`, params: { issue: 'invalid_value' } });
          return z.NEVER;
        }
        return [...new Set(items)] as T[number][];
      })
      // A transform has no JSON Schema of its own; partners see what they may send.
      .meta({ override: { type: 'string', pattern: `^${name}(?:,${name})*$`, description } })
  );
}

/**
 * An integer in a JSON body: a JSON number, never text. trpc-to-openapi's REST adapter switches
 * coercion on for every number field of an input schema it serves (so `"steps": "0x1"` would be
 * read as 1, on the tRPC door too once the shared schema is changed); behind a pipe it leaves the
 * field alone. inputs.test.ts keeps every partner input free of fields it would coerce.
 */
export const jsonInteger = ({ min, max }: { min: number; max: number }) => z.int().min(min).max(max).pipe(z.int());

/** Inputs reject unknown fields, so a typo is a clear 400 instead of silently ignored. */
export const strictInput = z.strictObject;

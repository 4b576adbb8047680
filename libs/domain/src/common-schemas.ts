import { z } from 'zod';

export const uuidSchema = z.uuid();

/** The `details[].issue` names of the checks below (docs/errors.md lists them). */
export const INPUT_ISSUES = { invalidCharacters: 'invalid_characters', outOfRange: 'out_of_range' } as const;

/**
 * What no partner text may carry. NUL cannot be stored in PostgreSQL text at all; the other C0
 * controls and DEL have no place in an identifier or a one-line value (they corrupt logs, exports
 * and terminals downstream); a lone UTF-16 surrogate has no UTF-8 form, so it would be stored as
 * U+FFFD and the value would no longer be exactly as supplied.
 */
// eslint-disable-next-line no-control-regex -- control characters are what this matches
const REFUSED_IN_ONE_LINE = /[\u0000-\u001f\u007f]|\p{Cs}/u;
/** Free text keeps tab, line feed and carriage return; every other control character is refused. */
// eslint-disable-next-line no-control-regex -- control characters are what this matches
const REFUSED_IN_FREE_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|\p{Cs}/u;

/** True when `text` holds a character partner text may not carry (see above). */
export function hasRefusedCharacter(text: string, { multiline = false }: { multiline?: boolean } = {}): boolean {
  return (multiline ? REFUSED_IN_FREE_TEXT : REFUSED_IN_ONE_LINE).test(text);
}

/**
 * JSON stored as it was supplied (jsonb) keeps every character PostgreSQL can hold; only NUL and
 * lone surrogates, which jsonb refuses, are refused, in keys and string values at any depth.
 */
// eslint-disable-next-line no-control-regex -- control characters are what this matches
const UNSTORABLE_IN_JSON = /\u0000|\p{Cs}/u;
export function jsonHasUnstorableText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (UNSTORABLE_IN_JSON.test(current)) return true;
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        if (UNSTORABLE_IN_JSON.test(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/** The character rule as a Zod check, for string schemas that need their own shape (e.g. trimmed). */
export const oneLineCharacters = z.refine<string>((text) => !hasRefusedCharacter(text), {
  message: 'Control characters (including NUL) and unpaired UTF-16 surrogates are not accepted.',
  params: { issue: INPUT_ISSUES.invalidCharacters },
});
export const freeTextCharacters = z.refine<string>((text) => !hasRefusedCharacter(text, { multiline: true }), {
  message: 'Control characters other than tab and line breaks (including NUL) and unpaired UTF-16 surrogates are not accepted.',
  params: { issue: INPUT_ISSUES.invalidCharacters },
});

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

/** Inputs reject unknown fields, so a typo is a clear 400 instead of silently ignored. */
export const strictInput = z.strictObject;

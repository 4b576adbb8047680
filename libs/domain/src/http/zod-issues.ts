import { z } from 'zod';
import type { $ZodIssue } from 'zod/v4/core';
import type { ErrorDetail } from './errors';

/**
 * What Zod says, in every schema of the process, about a value that is absent. Only the error map
 * sees the input: an absent enum, literal or union member would otherwise be `invalid_value` or
 * `invalid_union` like a wrong one, where the partner must read `required`. A schema's own error
 * message still wins over this one.
 */
const REQUIRED_MESSAGE = 'This field is required.';
z.config({ customError: (issue) => (issue.input === undefined ? REQUIRED_MESSAGE : undefined) });

/** Turns Zod issues into the stable `{field, issue}` details of the error envelope. */
export function detailsFromZodIssues(issues: readonly $ZodIssue[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        details.push({ field: base ? `${base}.${key}` : key, issue: 'unknown_field', message: 'This field is not accepted here.' });
      }
      continue;
    }
    const name = issueName(issue);
    details.push({ field: base || undefined, issue: name, message: messageFor(issue, name) });
  }
  return details;
}

function issueName(issue: $ZodIssue): string {
  if (issue.message === REQUIRED_MESSAGE) return 'required';
  switch (issue.code) {
    case 'invalid_type':
      return /received undefined/.test(issue.message) ? 'required' : 'invalid_type';
    case 'too_big':
      return issue.origin === 'string' ? 'too_long' : issue.origin === 'array' ? 'too_many' : 'too_large';
    case 'too_small':
      return issue.origin === 'string' ? (issue.minimum === 1 ? 'required' : 'too_short') : issue.origin === 'array' ? 'too_few' : 'too_small';
    case 'invalid_format':
      return 'invalid_format';
    case 'invalid_value':
      return 'invalid_value';
    case 'custom':
      // A refinement names its own issue (common-schemas INPUT_ISSUES); one that does not is generic.
      return typeof issue.params?.issue === 'string' ? issue.params.issue : 'invalid';
    default:
      return 'invalid';
  }
}

const plural = (n: number | bigint, one: string, many: string) => `${n} ${n === 1 || n === 1n ? one : many}`;

/**
 * The API's own sentence for each stock Zod issue ("Too big: expected string to have <=190
 * characters" reads as a library's, not ours). Refinements keep the message they were given; no
 * message repeats the rejected value.
 */
function messageFor(issue: $ZodIssue, name: string): string {
  switch (issue.code) {
    case 'invalid_type':
      if (name === 'required') return 'This field is required.';
      return `Must be ${issue.expected === 'object' ? 'a JSON object' : issue.expected === 'array' ? 'an array' : `a ${issue.expected}`}.`;
    case 'too_big': {
      const at = issue.inclusive === false ? 'less than' : 'at most';
      if (issue.origin === 'string') return `Must be ${at} ${plural(issue.maximum, 'character', 'characters')} long.`;
      if (issue.origin === 'array') return `Must have ${at} ${plural(issue.maximum, 'item', 'items')}.`;
      return `Must be ${at} ${issue.maximum}.`;
    }
    case 'too_small': {
      if (name === 'required') return 'This field is required and must not be empty.';
      const at = issue.inclusive === false ? 'more than' : 'at least';
      if (issue.origin === 'string') return `Must be ${at} ${plural(issue.minimum, 'character', 'characters')} long.`;
      if (issue.origin === 'array') return `Must have ${at} ${plural(issue.minimum, 'item', 'items')}.`;
      return `Must be ${at} ${issue.minimum}.`;
    }
    case 'invalid_format':
      return `Must be a valid ${FORMAT_NAMES[issue.format] ?? issue.format}.`;
    case 'invalid_value':
      return issue.values.length === 1 ? `Must be ${JSON.stringify(issue.values[0])}.` : `Must be one of: ${issue.values.map((v) => String(v)).join(', ')}.`;
    default:
      return issue.message;
  }
}

const FORMAT_NAMES: Record<string, string> = {
  uuid: 'UUID',
  email: 'email address',
  datetime: 'date-time with a time zone (RFC 3339, e.g. 2026-01-31T09:30:00Z)',
  date: 'date (YYYY-MM-DD)',
  url: 'URL',
  regex: 'value of the documented format',
};

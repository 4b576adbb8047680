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
    details.push({ field: base || undefined, issue: issueName(issue), message: issue.message });
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

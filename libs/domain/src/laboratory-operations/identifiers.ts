import { randomBytes } from 'node:crypto';

// Crockford base32: no I, L, O or U, so a reference read aloud or retyped is not misread.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A laboratory-style reference such as `REQ-7K3M9Q2XTA`, for values the operator did not supply. */
export function laboratoryReference(prefix: 'REQ' | 'LAB' | 'SPC' | 'ACC'): string {
  const bytes = randomBytes(10);
  return `${prefix}-${[...bytes].map((b) => ALPHABET[b & 31]).join('')}`;
}

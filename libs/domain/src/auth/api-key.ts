import { createHash, randomInt } from 'node:crypto';
import type { Environment } from '@lop/contract';

const PREFIX: Record<Environment, string> = { sandbox: 'lop_test_', production: 'lop_live_' };
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 40;
const KEY_PATTERN = /^lop_(test|live)_[0-9A-Za-z]{32,64}$/;

/** A new key's text; shown once, then only its hash is kept. */
export function generateApiKey(environment: Environment): string {
  let secret = '';
  for (let i = 0; i < SECRET_LENGTH; i++) secret += ALPHABET[randomInt(ALPHABET.length)];
  return PREFIX[environment] + secret;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Enough of the key for an administrator to recognise it, not enough to use it. */
export function displayPrefix(key: string): string {
  return key.slice(0, PREFIX.sandbox.length + 4);
}

/** The environment a well-formed key claims, or null for text that cannot be a key. */
export function keyEnvironment(key: string): Environment | null {
  const match = KEY_PATTERN.exec(key);
  if (!match) return null;
  return match[1] === 'live' ? 'production' : 'sandbox';
}

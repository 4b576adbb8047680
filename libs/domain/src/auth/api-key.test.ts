import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { displayPrefix, generateApiKey, hashApiKey, keyEnvironment } from './api-key';

describe('API key text (DESIGN §4)', () => {
  it.each([
    ['sandbox', /^lop_test_[0-9A-Za-z]{32,}$/],
    ['production', /^lop_live_[0-9A-Za-z]{32,}$/],
  ] as const)('a %s key is its prefix followed by at least 32 base62 characters', (environment, pattern) => {
    const key = generateApiKey(environment);
    expect(key).toMatch(pattern);
    expect(keyEnvironment(key)).toBe(environment);
  });

  it('keys are random: no repeats in many draws', () => {
    const keys = new Set(Array.from({ length: 500 }, () => generateApiKey('sandbox')));
    expect(keys.size).toBe(500);
  });

  it('the random part uses the whole base62 alphabet', () => {
    const seen = new Set(
      Array.from({ length: 200 }, () => generateApiKey('production').slice('lop_live_'.length))
        .join('')
        .split(''),
    );
    expect(seen.size).toBe(62);
  });

  it('the stored hash is the SHA-256 hex digest of the whole key text', () => {
    const key = generateApiKey('sandbox');
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).toBe(hashApiKey(key));
    expect(hashApiKey(key)).not.toBe(hashApiKey(`${key}x`));
  });

  it('the hash never contains the key text', () => {
    const key = generateApiKey('sandbox');
    expect(hashApiKey(key)).not.toContain(key.slice(9, 17));
  });

  it('the display prefix names the environment and four characters, not enough to use the key', () => {
    const key = generateApiKey('sandbox');
    const prefix = displayPrefix(key);
    expect(prefix).toBe(key.slice(0, 13));
    expect(prefix).toMatch(/^lop_test_[0-9A-Za-z]{4}$/);
    expect(displayPrefix(generateApiKey('production'))).toMatch(/^lop_live_[0-9A-Za-z]{4}$/);
    expect(keyEnvironment(prefix)).toBeNull();
  });

  it.each([
    ['empty text', ''],
    ['an unknown prefix', `lop_prod_${'a'.repeat(40)}`],
    ['no prefix', 'a'.repeat(49)],
    ['too short a secret', `lop_test_${'a'.repeat(31)}`],
    ['too long a secret', `lop_test_${'a'.repeat(65)}`],
    ['a character outside base62', `lop_test_${'a'.repeat(39)}-`],
    ['surrounding whitespace', ` lop_test_${'a'.repeat(40)}`],
    ['an upper-case prefix', `LOP_TEST_${'a'.repeat(40)}`],
  ])('text with %s is not a key', (_rule, text) => {
    expect(keyEnvironment(text)).toBeNull();
  });

  it('the shortest and longest accepted secrets', () => {
    expect(keyEnvironment(`lop_live_${'Z'.repeat(32)}`)).toBe('production');
    expect(keyEnvironment(`lop_test_${'0'.repeat(64)}`)).toBe('sandbox');
  });
});

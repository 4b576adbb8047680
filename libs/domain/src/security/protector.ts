import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const VERSION = 'v1';

/**
 * Encrypts personal data at rest with AES-256-GCM. The stored text is
 * `v1.<iv>.<tag>.<ciphertext>` (base64url): authenticated, so tampering is detected.
 */
export class DataProtector {
  private readonly encryptionKey: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the encryption key must be 32 bytes (base64 of 32 random bytes)');
    // A derived subkey, so the master key could later serve another purpose without key reuse.
    // Nothing is signed with it: report retrieval is authorized by a server-side record (results/reports.ts).
    this.encryptionKey = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'partner-service/encryption', 32));
  }

  encrypt(value: unknown): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  decrypt<T = unknown>(stored: string): T {
    const [version, iv, tag, ciphertext] = stored.split('.');
    if (version !== VERSION) throw new Error('unknown protected-data version');
    const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    return JSON.parse(plaintext.toString('utf8')) as T;
  }
}

/**
 * The key from configuration (base64), or — for the embedded default — one generated once and
 * kept in the data folder with owner-only permissions.
 */
export function loadOrCreateMasterKey(configured: string | undefined, keyFile: string): Buffer {
  if (configured) return Buffer.from(configured, 'base64');
  if (existsSync(keyFile)) return Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'base64');
  mkdirSync(dirname(keyFile), { recursive: true });
  const key = randomBytes(32);
  writeFileSync(keyFile, key.toString('base64'), { mode: 0o600 });
  return key;
}

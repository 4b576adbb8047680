import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const VERSION = 'v1';

/**
 * Encrypts personal data at rest with AES-256-GCM. The stored text is
 * `v1.<iv>.<tag>.<ciphertext>` (base64url): authenticated, so tampering is detected.
 * Also authenticates the few tokens the service hands out and must recognise later (event
 * cursors), with a subkey per purpose. The master key is configured or kept in the data folder,
 * so both survive restarts and agree across replicas.
 */
export class DataProtector {
  private readonly encryptionKey: Buffer;
  private readonly masterKey: Buffer;
  private readonly digestKeys = new Map<string, Buffer>();

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the encryption key must be 32 bytes (base64 of 32 random bytes)');
    this.masterKey = Buffer.from(masterKey);
    // Derived subkeys, one per purpose, so no key is used for two things.
    // Report retrieval is authorized by a server-side record (results/reports.ts), not by a signature.
    this.encryptionKey = this.subkey('partner-service/encryption');
  }

  private subkey(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.masterKey, Buffer.alloc(0), purpose, 32));
  }

  /** HMAC-SHA256 of `message` under the subkey of `purpose` (e.g. 'partner-service/event-cursor'). */
  digest(purpose: string, message: string): Buffer {
    let key = this.digestKeys.get(purpose);
    if (!key) this.digestKeys.set(purpose, (key = this.subkey(purpose)));
    return createHmac('sha256', key).update(message, 'utf8').digest();
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

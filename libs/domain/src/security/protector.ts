import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** `v1.<iv>.<tag>.<ct>`: the key derived from the master key, which the keyring calls version 1. */
const LEGACY_FORMAT = 'v1';
/** `v2.<key version>.<iv>.<tag>.<ct>`: a data key of the keyring (security/key-rotation.ts). */
const VERSIONED_FORMAT = 'v2';
/** `w1.<iv>.<tag>.<ct>`: a data key wrapped by the master key's wrapping subkey. */
const WRAPPED_FORMAT = 'w1';
export const LEGACY_KEY_VERSION = 1;

/** A ciphertext names a key version this process has not loaded (yet, or any more: retired). */
export class UnknownKeyVersionError extends Error {
  override name = 'UnknownKeyVersionError';
  constructor(readonly keyVersion: number) {
    super(`protected data uses encryption key version ${keyVersion}, which this process does not hold`);
  }
}

/** A row of the keyring table: version 1 has no wrapped key (it is derived from the master key). */
export interface KeyringEntry {
  version: number;
  wrappedKey: string | null;
}

const versionAad = (version: number) => Buffer.from(`partner-service/data-key/${version}`, 'utf8');

/**
 * Encrypts personal data at rest with AES-256-GCM. Authenticated, so tampering is detected.
 * Stored text (base64url parts): `v1.<iv>.<tag>.<ct>` under the key derived from the master key
 * (key version 1, what every release before key rotation wrote), or `v2.<version>.<iv>.<tag>.<ct>`
 * under a data key of the keyring, which the master key wraps (security/key-rotation.ts). New
 * writes use the newest version this process holds; reads use whichever version a value names.
 * Also authenticates the few tokens the service hands out and must recognise later (event
 * cursors), with a subkey per purpose. The master key is configured or kept in the data folder,
 * so both survive restarts and agree across replicas.
 */
export class DataProtector {
  private readonly legacyKey: Buffer;
  private readonly wrappingKey: Buffer;
  private readonly masterKey: Buffer;
  private readonly digestKeys = new Map<string, Buffer>();
  /** Data keys of versions ≥ 2, unwrapped. */
  private dataKeys = new Map<number, Buffer>();
  private current = LEGACY_KEY_VERSION;
  private refresher: (() => Promise<void>) | undefined;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the encryption key must be 32 bytes (base64 of 32 random bytes)');
    this.masterKey = Buffer.from(masterKey);
    // Derived subkeys, one per purpose, so no key is used for two things.
    // Report retrieval is authorized by a server-side record (results/reports.ts), not by a signature.
    this.legacyKey = this.subkey('partner-service/encryption');
    this.wrappingKey = this.subkey('partner-service/key-wrapping');
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

  /** The key version new writes use. */
  get currentKeyVersion(): number {
    return this.current;
  }

  /** The key versions this process can read. */
  get keyVersions(): number[] {
    return [LEGACY_KEY_VERSION, ...this.dataKeys.keys()].sort((a, b) => a - b);
  }

  encrypt(value: unknown): string {
    const version = this.current;
    const iv = randomBytes(12);
    const plaintext = Buffer.from(JSON.stringify(value), 'utf8');
    if (version === LEGACY_KEY_VERSION) {
      // Exactly what releases before rotation write, so they read it during a rollout.
      const cipher = createCipheriv('aes-256-gcm', this.legacyKey, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return [LEGACY_FORMAT, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
    }
    const cipher = createCipheriv('aes-256-gcm', this.dataKeys.get(version)!, iv);
    // The version is authenticated too: relabelling a value fails rather than decrypting garbage.
    cipher.setAAD(versionAad(version));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return [VERSIONED_FORMAT, String(version), iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  /** Decrypts with the key the value names; UnknownKeyVersionError when this process lacks it (see `open`). */
  decrypt<T = unknown>(stored: string): T {
    const parts = stored.split('.');
    const version = keyVersionOf(stored);
    let key: Buffer;
    let rest: string[];
    if (version === LEGACY_KEY_VERSION && parts[0] === LEGACY_FORMAT) {
      key = this.legacyKey;
      rest = parts.slice(1);
    } else {
      const found = this.dataKeys.get(version);
      if (!found) throw new UnknownKeyVersionError(version);
      key = found;
      rest = parts.slice(2);
    }
    const [iv, tag, ciphertext] = rest;
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    if (parts[0] === VERSIONED_FORMAT) decipher.setAAD(versionAad(version));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    return JSON.parse(plaintext.toString('utf8')) as T;
  }

  /**
   * `decrypt`, reloading the keyring once when the value names a version this process has not
   * heard of yet (written by a process that learnt of a rotation a moment earlier).
   */
  async open<T = unknown>(stored: string): Promise<T> {
    try {
      return this.decrypt<T>(stored);
    } catch (error) {
      if (!(error instanceof UnknownKeyVersionError) || !this.refresher) throw error;
      await this.refresher();
      return this.decrypt<T>(stored);
    }
  }

  /** Reloads the keyring once if any of these values names a version this process does not hold yet. */
  async holdKeysFor(stored: Iterable<string>): Promise<void> {
    for (const value of stored) {
      const version = keyVersionOf(value);
      if (version !== LEGACY_KEY_VERSION && !this.dataKeys.has(version)) return void (await this.refresher?.());
    }
  }

  /** What `open` calls to reload the keyring (security/key-rotation.ts sets it). */
  setKeyringRefresher(refresh: (() => Promise<void>) | undefined): void {
    this.refresher = refresh;
  }

  /** A fresh data key for `version`, wrapped for the keyring table. */
  newWrappedKey(version: number): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.wrappingKey, iv);
    cipher.setAAD(versionAad(version));
    const wrapped = Buffer.concat([cipher.update(randomBytes(32)), cipher.final()]);
    return [WRAPPED_FORMAT, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), wrapped.toString('base64url')].join('.');
  }

  private unwrap(entry: KeyringEntry): Buffer {
    const [format, iv, tag, wrapped] = (entry.wrappedKey ?? '').split('.');
    if (format !== WRAPPED_FORMAT) throw new Error(`encryption key version ${entry.version}: unknown wrapped-key format`);
    const decipher = createDecipheriv('aes-256-gcm', this.wrappingKey, Buffer.from(iv, 'base64url'));
    decipher.setAAD(versionAad(entry.version));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(wrapped, 'base64url')), decipher.final()]);
    } catch {
      throw new Error(`encryption key version ${entry.version} was wrapped under another master key (PARTNER_ENCRYPTION_KEY differs from the other processes')`);
    }
  }

  /**
   * Replaces the data keys with the keyring's (its rows as read): retired versions are forgotten,
   * new ones unwrapped, and new writes use the newest version held. A key that cannot be unwrapped
   * (another master key) is left out and reported; this process then keeps writing with the newest
   * key it can read, which the re-encryption job moves on later.
   */
  installKeyring(entries: KeyringEntry[]): { unreadable: { version: number; error: Error }[] } {
    const keys = new Map<number, Buffer>();
    const unreadable: { version: number; error: Error }[] = [];
    for (const entry of entries) {
      if (entry.version === LEGACY_KEY_VERSION) continue;
      const known = this.dataKeys.get(entry.version);
      if (known) keys.set(entry.version, known);
      else {
        try {
          keys.set(entry.version, this.unwrap(entry));
        } catch (error) {
          unreadable.push({ version: entry.version, error: error as Error });
        }
      }
    }
    this.dataKeys = keys;
    this.current = Math.max(LEGACY_KEY_VERSION, ...keys.keys());
    return { unreadable };
  }
}

/** The key version a stored value names (1 for the legacy `v1.` form). */
export function keyVersionOf(stored: string): number {
  const [format, second] = stored.split('.', 2);
  if (format === LEGACY_FORMAT) return LEGACY_KEY_VERSION;
  if (format === VERSIONED_FORMAT && /^[1-9][0-9]{0,8}$/.test(second ?? '')) return Number(second);
  throw new Error('unknown protected-data version');
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

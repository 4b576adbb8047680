import { timingSafeEqual } from 'node:crypto';

/**
 * The one way a list hands out a page cursor: opaque to its reader, bound to the list it came
 * from and authenticated, so it survives restarts, holds on every replica, and can be neither
 * forged nor carried to another list. Bytes, base64url:
 *
 *   version (1) · list tag (8) · position · position tag (16)
 *
 * The list tag is an HMAC of the list's name (`binding`), the position tag an HMAC of the list's
 * name and the position, both under a subkey of the service's master key named by `purpose`. The
 * partner event stream's cursors are exactly this with a sequence as position (events/stream.ts);
 * the console's lists use a row id.
 */

/** What signs a cursor: the service's DataProtector (security/protector.ts), named by what it does so http stays below security. */
export interface CursorSigner {
  digest(purpose: string, message: string): Buffer;
}

/** How a list's position is written in its cursor. */
export interface CursorPosition<P> {
  bytes: number;
  write(position: P, into: Buffer, at: number): void;
  /** Null when the bytes stand for no position of this kind. */
  read(from: Buffer, at: number): P | null;
  /** The position as the position tag signs it. */
  text(position: P): string;
}

/** A stream's last sequence seen, as an unsigned 64-bit integer. */
export const sequencePosition: CursorPosition<number> = {
  bytes: 8,
  write: (sequence, into, at) => void into.writeBigUInt64BE(BigInt(sequence), at),
  read(from, at) {
    const sequence = from.readBigUInt64BE(at);
    return sequence > BigInt(Number.MAX_SAFE_INTEGER) ? null : Number(sequence);
  },
  text: (sequence) => String(sequence),
};

/** The last row of a page, by its UUID. */
export const rowIdPosition: CursorPosition<string> = {
  bytes: 16,
  write: (id, into, at) => void Buffer.from(id.replaceAll('-', ''), 'hex').copy(into, at),
  read(from, at) {
    const hex = from.subarray(at, at + 16).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  },
  text: (id) => id,
};

/** Why a cursor was refused: each list answers these with its own error. */
export type CursorRefusal = 'malformed' | 'another_list' | 'forged';

export type DecodedCursor<P> = { ok: true; position: P } | { ok: false; refusal: CursorRefusal };

export interface CursorCodec<P> {
  encode(signer: CursorSigner, binding: string, position: P): string;
  decode(signer: CursorSigner, binding: string, cursor: string): DecodedCursor<P>;
}

export function cursorCodec<P>(options: { purpose: string; version: number; position: CursorPosition<P> }): CursorCodec<P> {
  const { purpose, version, position } = options;
  const size = 1 + 8 + position.bytes + 16;
  const listTag = (signer: CursorSigner, binding: string) => signer.digest(purpose, `stream:${binding}`).subarray(0, 8);
  const positionTag = (signer: CursorSigner, binding: string, at: P) => signer.digest(purpose, `position:${binding}:${position.text(at)}`).subarray(0, 16);
  return {
    encode(signer, binding, at) {
      const bytes = Buffer.alloc(size);
      bytes.writeUInt8(version, 0);
      listTag(signer, binding).copy(bytes, 1);
      position.write(at, bytes, 9);
      positionTag(signer, binding, at).copy(bytes, 9 + position.bytes);
      return bytes.toString('base64url');
    },
    decode(signer, binding, cursor) {
      const bytes = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
      if (bytes.length !== size || bytes.readUInt8(0) !== version || bytes.toString('base64url') !== cursor) return { ok: false, refusal: 'malformed' };
      if (!timingSafeEqual(bytes.subarray(1, 9), listTag(signer, binding))) return { ok: false, refusal: 'another_list' };
      const at = position.read(bytes, 9);
      if (at === null || !timingSafeEqual(bytes.subarray(9 + position.bytes), positionTag(signer, binding, at))) return { ok: false, refusal: 'forged' };
      return { ok: true, position: at };
    },
  };
}

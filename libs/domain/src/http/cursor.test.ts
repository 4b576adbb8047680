import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../events/stream';
import { DataProtector } from '../security/protector';
import { cursorCodec, rowIdPosition, sequencePosition } from './cursor';

const protector = new DataProtector(Buffer.alloc(32, 7));
const stream = { clientId: '11111111-2222-4333-8444-555555555555', environment: 'sandbox' as const };

describe('page cursors', () => {
  it('the partner event cursor keeps its wire format: cursors partners already hold still decode, and are issued byte for byte the same', () => {
    // Issued by events/stream.ts before it used the shared helper, under this master key.
    expect(encodeCursor(protector, stream, 42)).toBe('AhStWWYb9Zu7AAAAAAAAACrZYoq9FBqPT6vEcaxntW9X');
    expect(decodeCursor(protector, stream, 'AhStWWYb9Zu7AAAAAAAAACrZYoq9FBqPT6vEcaxntW9X')).toBe(42);
    const production = { ...stream, environment: 'production' as const };
    expect(decodeCursor(protector, production, 'AuwYy4hhOmXRAB________9hobpgfLC1yY7Q6hItqMOM')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('a cursor is refused by another list: another binding, another purpose, another key, or altered', () => {
    const orders = cursorCodec({ purpose: 'test/orders', version: 1, position: rowIdPosition });
    const deliveries = cursorCodec({ purpose: 'test/deliveries', version: 1, position: rowIdPosition });
    const id = '0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    const cursor = orders.encode(protector, 'lab:client:sandbox', id);
    expect(orders.decode(protector, 'lab:client:sandbox', cursor)).toEqual({ ok: true, position: id });
    expect(orders.decode(protector, 'lab:other:sandbox', cursor)).toEqual({ ok: false, refusal: 'another_list' });
    expect(deliveries.decode(protector, 'lab:client:sandbox', cursor)).toEqual({ ok: false, refusal: 'another_list' });
    expect(orders.decode(new DataProtector(Buffer.alloc(32, 8)), 'lab:client:sandbox', cursor)).toEqual({ ok: false, refusal: 'another_list' });
    const altered = Buffer.from(cursor, 'base64url');
    altered[12] ^= 1;
    expect(orders.decode(protector, 'lab:client:sandbox', altered.toString('base64url'))).toEqual({ ok: false, refusal: 'forged' });
    expect(orders.decode(protector, 'lab:client:sandbox', Buffer.from(`order:${id}`).toString('base64url'))).toEqual({ ok: false, refusal: 'malformed' });
    // A sequence cursor is not a row cursor, even under the same purpose and binding.
    const sequences = cursorCodec({ purpose: 'test/orders', version: 1, position: sequencePosition });
    expect(orders.decode(protector, 'lab:client:sandbox', sequences.encode(protector, 'lab:client:sandbox', 7))).toEqual({ ok: false, refusal: 'malformed' });
  });
});

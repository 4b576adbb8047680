import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { envelopeOf } from './envelope';
import { acceptsPrerendered, prerendered, responseJson } from './prerendered';

describe('pre-rendered response data', () => {
  const page = (events: unknown[]) => ({ events, next_cursor: 'c', has_more: false });

  it('is sent as its text, inside the envelope as JSON.stringify would place it', () => {
    // `$&` and `$'` would be replacement patterns to String.prototype.replace: the text goes in as it is.
    const events = [{ id: "a$&b$'c", n: 1.5 }];
    const text = JSON.stringify(page(events));
    const envelope = { data: prerendered(page(events), text), request_id: 'req_1', cursor: 'c' };
    expect(responseJson(envelope)).toBe(JSON.stringify(envelope));
  });

  it('the text is what is sent, not the object: the bytes stored at append', () => {
    const envelope = { data: prerendered(page([]), '{"events":[{"amount":1.50}],"next_cursor":"c","has_more":false}'), request_id: 'req_1' };
    expect(responseJson(envelope)).toBe('{"data":{"events":[{"amount":1.50}],"next_cursor":"c","has_more":false},"request_id":"req_1"}');
  });

  it('data rendered as bytes is sent as bytes, copied as they are', () => {
    const json = Buffer.from('{"events":[{"name":"Zoë","amount":1.50}],"next_cursor":"c","has_more":false}');
    const envelope = { data: prerendered(page([]), json), request_id: 'req_1', cursor: 'c' };
    const sent = responseJson(envelope);
    expect(Buffer.isBuffer(sent)).toBe(true);
    expect(sent.toString()).toBe(`{"data":${json.toString()},"request_id":"req_1","cursor":"c"}`);
  });

  it('anything else is JSON.stringify', () => {
    const envelope = { data: page([{ a: 1 }]), request_id: 'req_1' };
    expect(responseJson(envelope)).toBe(JSON.stringify(envelope));
    expect(responseJson(null)).toBe('null');
  });

  it('the output schema answers a pre-rendered page as it is and still checks anything else', async () => {
    const schema = acceptsPrerendered(envelopeOf(z.object({ events: z.array(z.object({ id: z.string() })), next_cursor: z.string(), has_more: z.boolean() })));
    const rendered = { data: prerendered(page([{ id: 'x' }]), JSON.stringify(page([{ id: 'x' }]))), request_id: 'r' };
    expect(await schema.parseAsync(rendered)).toBe(rendered);
    await expect(schema.parseAsync({ data: page([{ id: 7 }]), request_id: 'r' })).rejects.toThrow();
  });
});

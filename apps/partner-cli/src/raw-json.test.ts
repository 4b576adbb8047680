import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rawArrayElements } from './raw-json';

describe('rawArrayElements finds the exact text of each element', () => {
  it('for any JSON values, compact or indented, among sibling members before and after', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), fc.jsonValue(), fc.constantFrom(0, 2, '\t'), (elements, sibling, indent) => {
        const document = { request_id: sibling, data: { before: sibling, 'ev"ents': [sibling], events: elements, next_cursor: 'x' }, cursor: null };
        const text = JSON.stringify(document, null, indent);
        const raws = rawArrayElements(text, ['data', 'events']);
        expect(raws.map((raw) => JSON.parse(raw))).toEqual(JSON.parse(text).data.events);
        if (indent === 0) expect(raws).toEqual(elements.map((element) => JSON.stringify(element)));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the bytes as sent: key order, number spelling and escapes that JSON.stringify would change', () => {
    const text = '{"data":{"events":[{"b":1,"a":1.50,"2":"x","s":"caf\\u00e9 \\/"} , {"n":1e2}],"has_more":false}}';
    expect(rawArrayElements(text, ['data', 'events'])).toEqual(['{"b":1,"a":1.50,"2":"x","s":"caf\\u00e9 \\/"}', '{"n":1e2}']);
  });

  it('refuses a document without the path or with a broken array', () => {
    expect(() => rawArrayElements('{"data":{"items":[]}}', ['data', 'events'])).toThrow('no member "events"');
    expect(() => rawArrayElements('{"data":{"events":[1 2]}}', ['data', 'events'])).toThrow('expected , or ]');
    expect(() => rawArrayElements('{"data":{"events":["abc', ['data', 'events'])).toThrow('unterminated string');
  });
});

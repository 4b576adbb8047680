import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApiDocument } from '../openapi/document';
import { checkEnumDocumentation, documentEnum, ENUM_DOCUMENTATION } from './enum-descriptions';

const colourSchema = z.enum(['red', 'green']);

describe('enum documentation', () => {
  it('must describe every value of the schema, and only those (a type error otherwise)', () => {
    // @ts-expect-error `green` has no description
    documentEnum(colourSchema, { description: 'A colour.', values: { red: 'Stop.' } });
    // @ts-expect-error `blue` is not a value of the schema
    documentEnum(colourSchema, { description: 'A colour.', values: { red: 'Stop.', green: 'Go.', blue: 'Sky.' } });
    expect(documentEnum(colourSchema, { description: 'A colour.', values: { red: 'Stop.', green: 'Go.' } }).values.green).toBe('Go.');
  });

  it('refuses an empty or whitespace-only description, naming the enumeration and the value', () => {
    const values = ['red', 'green'];
    expect(() => checkEnumDocumentation('Colour', values, { description: 'A colour.', values: { red: 'Stop.', green: '' } })).toThrow(/Enumeration Colour: value `green` has an empty description/);
    expect(() => checkEnumDocumentation('Colour', values, { description: 'A colour.', values: { red: ' \n', green: 'Go.' } })).toThrow(/Enumeration Colour: value `red` has an empty description/);
    expect(() => checkEnumDocumentation('Colour', values, { description: '  ', values: { red: 'Stop.', green: 'Go.' } })).toThrow(/Enumeration Colour has an empty description/);
  });

  it('refuses documentation that misses a published value or describes one the schema lacks', () => {
    expect(() => checkEnumDocumentation('Colour', ['red', 'green'], { description: 'A colour.', values: { red: 'Stop.' } })).toThrow(/Enumeration Colour: value `green` has no description/);
    expect(() => checkEnumDocumentation('Colour', ['red'], { description: 'A colour.', values: { red: 'Stop.', green: 'Go.' } })).toThrow(/Enumeration Colour describes values it does not have: `green`/);
  });

  it('accepts a complete documentation', () => {
    expect(() => checkEnumDocumentation('Colour', ['red', 'green'], { description: 'A colour.', values: { red: 'Stop.', green: 'Go.' } })).not.toThrow();
  });

  it('documents every enumeration the OpenAPI document publishes, each value non-empty', () => {
    const schemas = (buildOpenApiDocument().components?.schemas ?? {}) as Record<string, { enum?: unknown[]; 'x-enumDescriptions'?: Record<string, string> }>;
    const published = Object.entries(schemas).filter(([, schema]) => Array.isArray(schema.enum));
    expect(published.length).toBeGreaterThan(0);
    for (const [name, schema] of published) {
      expect(Object.keys(ENUM_DOCUMENTATION), name).toContain(name);
      for (const value of schema.enum!) expect(schema['x-enumDescriptions']?.[String(value)]?.trim(), `${name}.${String(value)}`).toBeTruthy();
    }
  });
});

import { z } from 'zod';

/** The spec's scopes, in the spec's order. */
export const SCOPES = [
  'catalog:read',
  'serviceability:read',
  'programs:read',
  'subjects:write',
  'orders:write',
  'orders:read',
  'orders:cancel',
  'results:read',
  'events:read',
] as const;

export const scopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof scopeSchema>;

export const ENVIRONMENTS = ['sandbox', 'production'] as const;
export const environmentSchema = z.enum(ENVIRONMENTS).meta({ id: 'Environment', description: 'sandbox or production' });
export type Environment = z.infer<typeof environmentSchema>;

/** Parses a comma list of scopes, or `all`. */
export function parseScopeList(text: string): Scope[] {
  if (text.trim() === 'all') return [...SCOPES];
  const scopes = text.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`unknown scope(s): ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
  if (scopes.length === 0) throw new Error('at least one scope is required');
  return [...new Set(scopes)] as Scope[];
}

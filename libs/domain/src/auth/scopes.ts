import { SCOPES, type Scope } from '@lop/contract';

/** Parses a comma list of scopes, or `all`. */
export function parseScopeList(text: string): Scope[] {
  if (text.trim() === 'all') return [...SCOPES];
  const scopes = text.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`unknown scope(s): ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
  if (scopes.length === 0) throw new Error('at least one scope is required');
  return [...new Set(scopes)] as Scope[];
}

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
export type Scope = (typeof SCOPES)[number];

/** The scope a procedure needs: `none` when any valid key may call it (health, sandbox fixtures). */
export type ProcedureScope = Scope | 'none';

export const ENVIRONMENTS = ['sandbox', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

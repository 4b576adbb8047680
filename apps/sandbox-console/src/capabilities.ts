import { useQuery } from '@tanstack/react-query';
import { scopeOf } from './inspector/rest-routes';
import { useTRPC } from './trpc';

export interface Capability {
  allowed: boolean;
  /** False until the key's scopes are read: background reads wait for it rather than risk a 403. */
  known: boolean;
  /** Why not, in words the reader can act on; undefined when allowed. */
  reason?: string;
}

/** The key in use, as the API describes it (prefix, environment, scopes, expiry). */
export function useKeySession() {
  const trpc = useTRPC();
  return useQuery({ ...trpc.console.session.queryOptions({}), staleTime: 60_000, refetchOnWindowFocus: true });
}

/**
 * Whether the key may call `procedure`, from the scope the procedure declares and the scopes the
 * key carries: an action the key cannot perform is disabled with the reason, instead of failing
 * on click. Until the key's scopes are known the action stays enabled (the API still decides).
 */
export function useCapability(procedure: string): Capability {
  const session = useKeySession();
  const scope = scopeOf(procedure);
  if (scope === 'none') return { allowed: true, known: true };
  if (!session.data) return { allowed: true, known: false };
  if (session.data.data.scopes.includes(scope)) return { allowed: true, known: true };
  return {
    allowed: false,
    known: true,
    reason: `This key lacks the ${scope} scope. A laboratory administrator can issue a sandbox key that has it: npm run admin -- keys create --client ${session.data.data.client_id} --environment sandbox --scopes ${[...session.data.data.scopes, scope].join(',')}`,
  };
}

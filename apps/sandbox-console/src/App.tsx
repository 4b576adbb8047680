import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { ConsoleShell } from './components/ConsoleShell';
import { KeyForm } from './components/KeyForm';
import { Loading } from './components/states';
import { forgetKey, forgetKeyInOtherTabs, keyFromOtherTabs, shareKeyWithOtherTabs, sharesKey, storedKey, storeKey, type Session } from './session';
import { createConsoleClient, describeError, isFinal, TRPCProvider, type OnUnauthorized } from './trpc';

class ProductionKeyError extends Error {}

const RECOVERY_POLL_MS = 5_000;

/** Health tells the key's environment: only a sandbox key opens the console, and only then is it stored. */
async function openSession(key: string, onUnauthorized: OnUnauthorized): Promise<Session> {
  const client = createConsoleClient(key, onUnauthorized);
  const health = await client.health.get.query({});
  if (health.data.environment !== 'sandbox') throw new ProductionKeyError();
  const queryClient = new QueryClient({
    defaultOptions: {
      queries: {
        // A 4xx answers the same the next time (404, 403, 401): only a failure that can pass is tried again.
        retry: (failures, error) => failures < 1 && !isFinal(error),
        // A view that failed because the API was unreachable (or answered 5xx) tries again by itself,
        // so it recovers when the API is back; a 4xx answers the same and is left alone.
        refetchInterval: (query) => (query.state.status === 'error' && !isFinal(query.state.error) ? RECOVERY_POLL_MS : false),
        refetchOnWindowFocus: true,
        staleTime: 2_000,
      },
    },
  });
  return { key, client, queryClient, version: health.data.version };
}

function refusal(error: unknown): string {
  if (error instanceof ProductionKeyError) {
    return 'This is a production key. The sandbox console only accepts sandbox keys (they start with lop_test_). The key was not stored.';
  }
  const described = describeError(error);
  // The console door itself refuses production keys (403, production_key_on_console).
  if (described.details.some((d) => d.issue === 'production_key_on_console')) {
    return 'This is a production key. The sandbox console only accepts sandbox keys (they start with lop_test_); use production keys with the partner REST API. The key was not stored.';
  }
  return described.code === 'unauthorized' ? `The API refused this key: ${described.message}` : described.message;
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  // A key kept in this tab, or handed over by another console tab that shares its key.
  const [checkingStored, setCheckingStored] = useState(true);
  const [sharing, setSharing] = useState(sharesKey);
  const [problem, setProblem] = useState<string | null>(null);
  // A key revoked or expired while the console is open: back to the key screen, with the API's reason.
  const active = useRef<Session | null>(null);
  active.current = session;
  const onUnauthorized: OnUnauthorized = (described) => {
    const current = active.current;
    if (!current) return;
    active.current = null;
    forgetKey();
    current.queryClient.clear();
    setSession(null);
    setProblem(`The API stopped accepting this key: ${described.message} Enter a valid sandbox key to continue.${described.requestId ? ` (request_id ${described.requestId})` : ''}`);
  };

  const onUnauthorizedRef = useRef(onUnauthorized);
  onUnauthorizedRef.current = onUnauthorized;

  // A key kept from earlier in this tab (or shared by another tab) is checked again: it may have been revoked since.
  useEffect(() => {
    let cancelled = false;
    void (async () => {
      const kept = storedKey();
      const key = kept ?? (await keyFromOtherTabs());
      if (cancelled) return;
      if (!key) return setCheckingStored(false);
      try {
        const opened = await openSession(key, (d) => onUnauthorizedRef.current(d));
        if (cancelled) return;
        // A key handed over by a sharing tab is shared from this tab too.
        if (!kept) {
          storeKey(key, true);
          setSharing(true);
        }
        setSession(opened);
      } catch (error) {
        if (cancelled) return;
        forgetKey();
        setProblem(`The key ${kept ? 'kept in this tab' : 'shared by another tab'} no longer opens the console. ${refusal(error)}`);
      } finally {
        if (!cancelled) setCheckingStored(false);
      }
    })();
    return () => {
      cancelled = true;
    };
  }, []);

  const submit = async (key: string, share: boolean) => {
    setProblem(null);
    try {
      const opened = await openSession(key, (d) => onUnauthorizedRef.current(d));
      storeKey(key, share);
      setSharing(share);
      setSession(opened);
    } catch (error) {
      setProblem(refusal(error));
    }
  };

  const signOutRef = useRef<(() => void) | null>(null);
  // While this tab shares its key, other console tabs opened now get it without asking the reader.
  useEffect(() => {
    if (!session || !sharing) return;
    return shareKeyWithOtherTabs(
      () => active.current?.key ?? null,
      () => signOutRef.current?.(),
    );
  }, [session, sharing]);

  const signOut = () => {
    if (sharing) void forgetKeyInOtherTabs();
    setSharing(false);
    forgetKey();
    session?.queryClient.clear();
    setSession(null);
    setProblem(null);
  };

  signOutRef.current = signOut;

  if (checkingStored && !session) {
    return (
      <main className="gate">
        <Loading label="Looking for a key kept in this tab or shared by another…" />
      </main>
    );
  }
  if (!session) return <KeyForm onSubmit={submit} problem={problem} />;
  return (
    <QueryClientProvider client={session.queryClient}>
      <TRPCProvider trpcClient={session.client} queryClient={session.queryClient}>
        <ConsoleShell session={session} onSignOut={signOut} />
      </TRPCProvider>
    </QueryClientProvider>
  );
}

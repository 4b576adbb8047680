import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { ConsoleShell } from './components/ConsoleShell';
import { KeyForm } from './components/KeyForm';
import { Loading } from './components/states';
import { forgetKey, storedKey, storeKey } from './session';
import { createConsoleClient, describeError, isFinal, TRPCProvider, type ConsoleClient, type OnUnauthorized } from './trpc';

export interface Session {
  key: string;
  client: ConsoleClient;
  queryClient: QueryClient;
  version: string;
}

class ProductionKeyError extends Error {}

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
  const [checkingStored, setCheckingStored] = useState(() => storedKey() !== null);
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

  // A key kept from earlier in this tab is checked again: it may have been revoked since.
  useEffect(() => {
    const key = storedKey();
    if (!key) return;
    let cancelled = false;
    openSession(key, (d) => onUnauthorizedRef.current(d)).then(
      (opened) => !cancelled && setSession(opened),
      (error: unknown) => {
        if (cancelled) return;
        forgetKey();
        setProblem(`The key kept in this tab no longer opens the console. ${refusal(error)}`);
      },
    ).finally(() => !cancelled && setCheckingStored(false));
    return () => {
      cancelled = true;
    };
  }, []);

  const submit = async (key: string) => {
    setProblem(null);
    try {
      const opened = await openSession(key, (d) => onUnauthorizedRef.current(d));
      storeKey(key);
      setSession(opened);
    } catch (error) {
      setProblem(refusal(error));
    }
  };

  const signOut = () => {
    forgetKey();
    session?.queryClient.clear();
    setSession(null);
    setProblem(null);
  };

  if (checkingStored && !session) {
    return (
      <main className="gate">
        <Loading label="Checking the key kept in this tab…" />
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

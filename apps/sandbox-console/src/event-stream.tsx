import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useCapability } from './capabilities';
import { isFinal, useTRPC, type Outputs } from './trpc';

export type StreamEvent = Outputs['events']['list']['data']['events'][number];

export interface EventStream {
  /** Every event read so far, in sequence order. */
  events: StreamEvent[];
  /** When each event arrived while this tab was watching (sequence → ms); the backlog read at start is not listed. */
  seenAt: ReadonlyMap<number, number>;
  loading: boolean;
  error: unknown;
  /** Following the stream (the reader's choice, and the key may read it). */
  live: boolean;
  /** The last poll could not reach the API (or it answered 5xx): polling goes on, and views recover when it answers. */
  reconnecting: boolean;
  setLive(live: boolean): void;
  /** Why the stream is not read at all (the key lacks events:read), when that is so. */
  blocked?: string;
  lastPolledAt: number | null;
}

const EventStreamContext = createContext<EventStream | null>(null);

const POLL_MS = 1_500;
const PAGE = 200;

/**
 * One reader of the caller's event stream for the whole console, exactly as a partner should
 * read it: follow next_cursor page by page, then keep polling from the last cursor. New events
 * also refresh whatever order, result and exception views are on screen.
 */
export function EventStreamProvider({ children }: { children: ReactNode }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [events, setEvents] = useState<StreamEvent[]>([]);
  const [seenAt] = useState(() => new Map<number, number>());
  const [live, setLive] = useState(true);
  // Until the first page without has_more, events are backlog, not arrivals.
  const caughtUp = useRef(false);

  const can = useCapability('events.list');
  const query = useQuery({
    // A background poll, not a reader's action: kept out of the request log (trpc.ts).
    ...trpc.events.list.queryOptions({ cursor, limit: PAGE }, { trpc: { context: { background: true } } }),
    enabled: can.allowed && can.known,
    // A 401/403 will answer the same next time: polling stops instead of hammering the API.
    refetchInterval: (q) => (live && !(q.state.error && isFinal(q.state.error)) ? POLL_MS : false),
    refetchOnWindowFocus: false,
    staleTime: 0,
    // Moving to the next cursor keeps the last page on screen instead of flashing a loading state.
    placeholderData: keepPreviousData,
  });

  const page = query.data?.data;
  useEffect(() => {
    if (!page) return;
    if (page.events.length > 0) {
      const now = Date.now();
      const arriving = caughtUp.current;
      setEvents((previous) => {
        const last = previous.length > 0 ? previous[previous.length - 1].sequence : 0;
        const fresh = page.events.filter((e) => e.sequence > last);
        if (fresh.length === 0) return previous;
        if (arriving) for (const e of fresh) seenAt.set(e.sequence, now);
        return [...previous, ...fresh];
      });
      void queryClient.invalidateQueries(trpc.orders.pathFilter());
      void queryClient.invalidateQueries(trpc.results.pathFilter());
      void queryClient.invalidateQueries(trpc.console.orders.pathFilter());
      // Another tab or the partner's own code may have moved a scenario on.
      void queryClient.invalidateQueries(trpc.console.orderScenarios.pathFilter());
    }
    if (!page.has_more) caughtUp.current = true;
    if (page.next_cursor !== cursor) setCursor(page.next_cursor);
  }, [page, cursor, queryClient, seenAt, trpc]);

  // A transient failure (the API down, a 5xx) is not "live": say so, and once the stream answers
  // again, re-read every view that failed meanwhile instead of leaving it on its error.
  const reconnecting = live && can.allowed && Boolean(query.error) && !isFinal(query.error);
  const wasReconnecting = useRef(false);
  useEffect(() => {
    if (wasReconnecting.current && !reconnecting) {
      void queryClient.refetchQueries({ predicate: (q) => q.state.status === 'error' && !isFinal(q.state.error) });
    }
    wasReconnecting.current = reconnecting;
  }, [reconnecting, queryClient]);

  const value = useMemo<EventStream>(
    () => ({
      events,
      seenAt,
      loading: can.allowed && query.isPending,
      error: query.error,
      live: live && can.allowed && !(query.error && isFinal(query.error)),
      reconnecting,
      setLive,
      blocked: can.reason,
      lastPolledAt: query.dataUpdatedAt || null,
    }),
    [events, seenAt, query.isPending, query.error, live, reconnecting, query.dataUpdatedAt, can.allowed, can.reason],
  );
  return <EventStreamContext.Provider value={value}>{children}</EventStreamContext.Provider>;
}

export function useEventStream(): EventStream {
  const stream = useContext(EventStreamContext);
  if (!stream) throw new Error('useEventStream outside EventStreamProvider');
  return stream;
}

import type { QueryClient } from '@tanstack/react-query';
import type { ConsoleClient } from './trpc';

/** An open console: the key the API accepted as a sandbox key, and the clients bound to it. */
export interface Session {
  key: string;
  client: ConsoleClient;
  queryClient: QueryClient;
  version: string;
}

/**
 * The key lives in sessionStorage only: gone when the tab closes, never in localStorage or a
 * cookie. If the reader opts in, tabs of the console that are open at the same time hand it to
 * each other over a BroadcastChannel (same origin only, nothing written to disk): a second tab
 * does not ask again, and once every console tab is closed the key is gone.
 */
const STORAGE_KEY = 'lop.sandbox-console.key';
const SHARE_FLAG = 'lop.sandbox-console.share';
const CHANNEL = 'lop.sandbox-console.keys';

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function storeKey(key: string, share = false): void {
  sessionStorage.setItem(STORAGE_KEY, key);
  if (share) sessionStorage.setItem(SHARE_FLAG, '1');
  else sessionStorage.removeItem(SHARE_FLAG);
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_KEY);
  sessionStorage.removeItem(SHARE_FLAG);
}

export function sharesKey(): boolean {
  try {
    return sessionStorage.getItem(SHARE_FLAG) === '1';
  } catch {
    return false;
  }
}

type Message = { type: 'ask'; id: string } | { type: 'key'; id: string; key: string } | { type: 'forget' };

const channel = () => (typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel(CHANNEL));

/** The key of another open console tab that shares it, or null when none answers in time. */
export function keyFromOtherTabs(waitMs = 400): Promise<string | null> {
  const ch = channel();
  if (!ch) return Promise.resolve(null);
  const id = Math.random().toString(36).slice(2);
  return new Promise((resolve) => {
    const done = (key: string | null) => {
      clearTimeout(timer);
      ch.close();
      resolve(key);
    };
    const timer = setTimeout(() => done(null), waitMs);
    ch.onmessage = (event: MessageEvent<Message>) => {
      if (event.data.type === 'key' && event.data.id === id) done(event.data.key);
    };
    ch.postMessage({ type: 'ask', id } satisfies Message);
  });
}

/**
 * While this tab shares its key: answer other tabs that ask, and sign out when one of them
 * forgets the key. Returns the function that stops listening.
 */
export function shareKeyWithOtherTabs(key: () => string | null, onForget: () => void): () => void {
  const ch = channel();
  if (!ch) return () => undefined;
  ch.onmessage = (event: MessageEvent<Message>) => {
    const current = key();
    if (event.data.type === 'ask' && current) ch.postMessage({ type: 'key', id: event.data.id, key: current } satisfies Message);
    if (event.data.type === 'forget') onForget();
  };
  return () => ch.close();
}

/** Tells the other sharing tabs that the reader forgot the key. */
export function forgetKeyInOtherTabs(): void {
  const ch = channel();
  ch?.postMessage({ type: 'forget' } satisfies Message);
  ch?.close();
}

/** Enough of the key to recognise it, never the whole of it. */
export function keyHint(key: string): string {
  return `${key.slice(0, 13)}…`;
}

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
 * each other over a BroadcastChannel (nothing written to disk): a second tab does not ask again,
 * and once every console tab is closed the key is gone.
 *
 * A BroadcastChannel reaches every page of the origin, /docs and the guides too, so the key never
 * crosses it in clear: it is sealed (AES-GCM) under a share secret kept in a session cookie whose
 * Path is the console's. document.cookie shows that cookie to console pages only, and the console
 * cannot be framed (frame-ancestors 'none'), so another page of the origin can ask and overhear
 * but cannot open the answer. The secret is not the key: the cookie goes to the server with the
 * console's own files only, which ignores it.
 */
const STORAGE_KEY = 'lop.sandbox-console.key';
const SHARE_FLAG = 'lop.sandbox-console.share';
const CHANNEL = 'lop.sandbox-console.keys';
const SHARE_COOKIE = 'lop_console_share';
/** The console's own path (vite's base, '/console/'), without the trailing slash: the cookie's Path. */
const CONSOLE_PATH = import.meta.env.BASE_URL.replace(/\/$/, '') || '/';

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function storeKey(key: string, share = false): void {
  sessionStorage.setItem(STORAGE_KEY, key);
  if (share) {
    sessionStorage.setItem(SHARE_FLAG, '1');
    if (!shareSecret()) writeShareSecret(base64url(crypto.getRandomValues(new Uint8Array(32))));
  } else sessionStorage.removeItem(SHARE_FLAG);
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

const base64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const fromBase64url = (text: string) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

function shareSecret(): string | null {
  const found = document.cookie.split('; ').find((c) => c.startsWith(`${SHARE_COOKIE}=`));
  return found ? found.slice(SHARE_COOKIE.length + 1) : null;
}

/** A session cookie (no Expires: gone with the browser session), sent to nothing but the console's files. */
function writeShareSecret(value: string, maxAge?: number): void {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `${SHARE_COOKIE}=${value}; Path=${CONSOLE_PATH}; SameSite=Strict${secure}${maxAge === undefined ? '' : `; Max-Age=${maxAge}`}`;
}

/** The sealing key, or null without a share secret or without WebCrypto (a page served over plain HTTP to another host). */
async function sealingKey(): Promise<CryptoKey | null> {
  const secret = shareSecret();
  if (!secret || typeof crypto === 'undefined' || !crypto.subtle) return null;
  try {
    return await crypto.subtle.importKey('raw', fromBase64url(secret), 'AES-GCM', false, ['encrypt', 'decrypt']);
  } catch {
    return null;
  }
}

interface Sealed {
  iv: string;
  sealed: string;
}

/** Sealed to one question: the ask's id is the additional data, so an answer cannot be replayed to another. */
async function seal(key: CryptoKey, id: string, text: string): Promise<Sealed> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(id) }, key, new TextEncoder().encode(text));
  return { iv: base64url(iv), sealed: base64url(new Uint8Array(sealed)) };
}

async function open(key: CryptoKey, id: string, message: Sealed): Promise<string | null> {
  try {
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64url(message.iv), additionalData: new TextEncoder().encode(id) }, key, fromBase64url(message.sealed));
    return new TextDecoder().decode(plain);
  } catch {
    return null;
  }
}

type Message = { type: 'ask'; id: string } | ({ type: 'key'; id: string } & Sealed) | ({ type: 'forget'; id: string } & Sealed);

const channel = () => (typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel(CHANNEL));

/** The key of another open console tab that shares it, or null when none answers in time. */
export async function keyFromOtherTabs(waitMs = 400): Promise<string | null> {
  const sealer = await sealingKey();
  const ch = sealer && channel();
  if (!sealer || !ch) return null;
  const id = base64url(crypto.getRandomValues(new Uint8Array(16)));
  return new Promise((resolve) => {
    const done = (key: string | null) => {
      clearTimeout(timer);
      ch.close();
      resolve(key);
    };
    const timer = setTimeout(() => done(null), waitMs);
    ch.onmessage = async (event: MessageEvent<Message>) => {
      if (event.data.type !== 'key' || event.data.id !== id) return;
      const key = await open(sealer, id, event.data);
      if (key) done(key);
    };
    ch.postMessage({ type: 'ask', id } satisfies Message);
  });
}

/**
 * While this tab shares its key: answer other tabs that ask (sealed, so only console tabs can
 * open it), and sign out when one of them forgets the key. Returns the function that stops listening.
 */
export function shareKeyWithOtherTabs(key: () => string | null, onForget: () => void): () => void {
  const ch = channel();
  if (!ch) return () => undefined;
  // Read now: a forgetting tab drops the cookie right after its message, before this tab opens it.
  const sealing = sealingKey();
  ch.onmessage = async (event: MessageEvent<Message>) => {
    const sealer = await sealing;
    const current = key();
    if (!sealer) return;
    if (event.data.type === 'ask' && current) ch.postMessage({ type: 'key', id: event.data.id, ...(await seal(sealer, event.data.id, current)) } satisfies Message);
    // Only a console tab can sign the others out: a forget must be sealed too.
    if (event.data.type === 'forget' && (await open(sealer, event.data.id, event.data)) === 'forget') onForget();
  };
  return () => ch.close();
}

/** Tells the other sharing tabs that the reader forgot the key, then drops the share secret. */
export async function forgetKeyInOtherTabs(): Promise<void> {
  const sealer = await sealingKey();
  const ch = channel();
  if (sealer && ch) {
    const id = base64url(crypto.getRandomValues(new Uint8Array(16)));
    ch.postMessage({ type: 'forget', id, ...(await seal(sealer, id, 'forget')) } satisfies Message);
  }
  ch?.close();
  writeShareSecret('', 0);
}

/** Enough of the key to recognise it, never the whole of it. */
export function keyHint(key: string): string {
  return `${key.slice(0, 13)}…`;
}

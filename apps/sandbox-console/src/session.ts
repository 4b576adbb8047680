/** The key lives in sessionStorage only: gone when the tab closes, never in localStorage or a cookie. */
const STORAGE_KEY = 'lop.sandbox-console.key';

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function storeKey(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

/** Enough of the key to recognise it, never the whole of it. */
export function keyHint(key: string): string {
  return `${key.slice(0, 13)}…`;
}

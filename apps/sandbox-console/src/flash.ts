/** A one-time message carried across a navigation (e.g. "order created" shown on the order's page). */
let pending: { key: string; message: string } | null = null;

export function setFlash(key: string, message: string): void {
  pending = { key, message };
}

export function takeFlash(key: string): string | null {
  if (pending?.key !== key) return null;
  const { message } = pending;
  pending = null;
  return message;
}

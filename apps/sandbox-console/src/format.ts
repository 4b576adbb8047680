/** Display helpers: times in the reader's locale, tones for states and events, fresh identifiers for forms. */

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function formatClock(iso: string): string {
  return new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export const humanize = (value: string) => value.replace(/_/g, ' ');

export type Tone = 'neutral' | 'info' | 'good' | 'warn' | 'bad';

export function lifecycleTone(lifecycle: string): Tone {
  switch (lifecycle) {
    case 'pending':
      return 'neutral';
    case 'active':
      return 'info';
    case 'resulted':
    case 'completed':
      return 'good';
    case 'cancelled':
      return 'warn';
    case 'failed':
      return 'bad';
    default:
      return 'neutral';
  }
}

export function eventTone(type: string): Tone {
  if (type === 'result.critical' || type === 'integration.action_required') return 'bad';
  if (type.startsWith('result.')) return 'good';
  if (type === 'order.cancelled') return 'warn';
  if (type === 'specimen.updated') return 'info';
  return 'neutral';
}

/** A fresh, readable external_order_id: unique enough for a sandbox, recognisable in lists. */
export function freshExternalOrderId(fixture: string): string {
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const random = crypto.getRandomValues(new Uint8Array(3));
  return `console-${fixture}-${stamp}-${Array.from(random, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A random UUID v4 that also works where crypto.randomUUID does not (a console opened over plain http on a LAN name). */
export function randomId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** "in 3 days", "2 hours ago": how far a time is from now, in the reader's language. */
export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const units: [Intl.RelativeTimeFormatUnit, number][] = [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
    ['second', 1],
  ];
  const [unit, size] = units.find(([, size]) => Math.abs(seconds) >= size) ?? ['second', 1];
  return new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }).format(Math.round(seconds / size), unit);
}

/** "1 dead letter", "3 dead letters": a count with its noun. */
export function countOf(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

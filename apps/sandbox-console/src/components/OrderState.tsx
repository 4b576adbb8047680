import { humanize, lifecycleTone } from '../format';
import { Badge } from './states';

/** Lifecycle as a badge, then its detail. */
export function OrderState({ lifecycle, detail }: { lifecycle: string; detail: string }) {
  return (
    <span className="order-state">
      <Badge tone={lifecycleTone(lifecycle)}>{lifecycle}</Badge>
      <span className="muted">{humanize(detail)}</span>
    </span>
  );
}

export function NextAction({ action }: { action: string }) {
  return <span className={`next-action${action === 'none' ? ' muted' : ''}`}>{action === 'none' ? 'nothing to do' : humanize(action)}</span>;
}

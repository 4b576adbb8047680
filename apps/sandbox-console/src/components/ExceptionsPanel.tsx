import { useQuery } from '@tanstack/react-query';
import { formatTime, humanize } from '../format';
import { useTRPC } from '../trpc';
import { Badge, Empty, ErrorNotice, Loading } from './states';

const severityTone = { info: 'info', warning: 'warn', error: 'bad', critical: 'bad' } as const;

export function ExceptionsPanel({ orderId }: { orderId: string }) {
  const trpc = useTRPC();
  const exceptions = useQuery(trpc.orders.exceptions.queryOptions({ orderId }));
  if (exceptions.isPending) return <Loading label="Reading exceptions…" />;
  if (exceptions.isError) return <ErrorNotice error={exceptions.error} onRetry={() => exceptions.refetch()} />;
  const view = exceptions.data.data;
  if (view.count === 0) return <Empty>No exceptions: nothing has gone wrong with this order.</Empty>;
  return (
    <div className="stack">
      {view.action_required && (
        <p className="note note-warn" role="status">
          <strong>Action required.</strong> An open exception is owned by you (the partner).
        </p>
      )}
      <div className="table-wrap" tabIndex={0} role="region" aria-label="Exceptions">
        <table>
          <caption className="visually-hidden">Exceptions of this order, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Category</th>
              <th scope="col">Severity</th>
              <th scope="col">Status</th>
              <th scope="col">Owner</th>
              <th scope="col">Retryable</th>
              <th scope="col">Opened</th>
              <th scope="col">Resolved</th>
            </tr>
          </thead>
          <tbody>
            {view.exceptions.map((e) => (
              <tr key={e.exception_id}>
                <td>
                  {humanize(e.category)}
                  <div className="muted small">on {e.entity_type}</div>
                </td>
                <td>
                  <Badge tone={severityTone[e.severity]}>{e.severity}</Badge>
                </td>
                <td>
                  <Badge tone={e.status === 'open' ? 'warn' : 'good'}>{e.status}</Badge>
                </td>
                <td>{e.owner_role}</td>
                <td>{e.retryable ? 'yes' : 'no'}</td>
                <td className="nowrap">{formatTime(e.opened_at)}</td>
                <td className="nowrap">{formatTime(e.resolved_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

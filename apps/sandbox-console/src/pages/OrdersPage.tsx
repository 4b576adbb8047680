import { LIFECYCLES, type Lifecycle } from '@lop/contract';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { useCapability } from '../capabilities';
import { NextAction, OrderState } from '../components/OrderState';
import { Badge, Empty, ErrorNotice, Loading } from '../components/states';
import { formatTime } from '../format';
import { href } from '../routing';
import { useSettled } from '../use-settled';
import { useTRPC } from '../trpc';

export function OrdersPage() {
  const trpc = useTRPC();
  const can = useCapability('console.orders');
  const [search, setSearch] = useState('');
  const [lifecycle, setLifecycle] = useState<Lifecycle | ''>('');
  // Typing does not send a request per key stroke: the list follows the settled text.
  const term = useSettled(search.trim(), 250);
  const searchId = useId();
  const lifecycleId = useId();
  const orders = useInfiniteQuery({
    ...trpc.console.orders.infiniteQueryOptions(
      { limit: 25, ...(term ? { external_order_id: term } : {}), ...(lifecycle ? { lifecycle } : {}) },
      { getNextPageParam: (last) => last.data.next_cursor ?? undefined },
    ),
    enabled: can.allowed && can.known,
    placeholderData: (previous) => previous,
  });
  const rows = orders.data?.pages.flatMap((p) => p.data.orders) ?? [];
  const filtered = Boolean(term || lifecycle);

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Orders</h1>
        <p className="lede">Your sandbox orders, newest first. Open one to run a scenario and follow its events, exceptions and results.</p>
      </header>
      <div className="toolbar" role="search" aria-label="Find orders">
        <div className="field-inline">
          <label htmlFor={searchId}>External order id</label>
          <input id={searchId} type="search" className="search" value={search} placeholder="part of the id" onChange={(e) => setSearch(e.target.value)} disabled={!can.allowed} />
        </div>
        <div className="field-inline">
          <label htmlFor={lifecycleId}>Lifecycle</label>
          <select id={lifecycleId} value={lifecycle} onChange={(e) => setLifecycle(e.target.value as Lifecycle | '')} disabled={!can.allowed}>
            <option value="">Any</option>
            {LIFECYCLES.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </div>
      </div>
      <article className="card">
        {!can.allowed ? (
          <p className="note note-warn reason">{can.reason}</p>
        ) : orders.isPending ? (
          <Loading label="Reading orders…" />
        ) : orders.isError ? (
          <ErrorNotice error={orders.error} onRetry={() => orders.refetch()} />
        ) : rows.length === 0 ? (
          filtered ? (
            <Empty>No order matches {term ? <>“{term}”</> : 'this filter'}{lifecycle ? ` in lifecycle ${lifecycle}` : ''}.</Empty>
          ) : (
            <Empty>
              No sandbox orders yet. <a href={href.fixtures}>Create one from a fixture</a> in one click.
            </Empty>
          )
        ) : (
          <>
            <div className="table-wrap" tabIndex={0} role="region" aria-label="Orders">
              <table>
                <caption className="visually-hidden">Sandbox orders</caption>
                <thead>
                  <tr>
                    <th scope="col">External order id</th>
                    <th scope="col">Test</th>
                    <th scope="col">Lifecycle</th>
                    <th scope="col">Next action</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((o) => (
                    <tr key={o.order_id}>
                      <td>
                        <a href={href.order(o.order_id)}>{o.external_order_id}</a>
                      </td>
                      <td>
                        {o.item_name}
                        <div className="muted small">{o.program_name}</div>
                      </td>
                      <td>
                        <OrderState lifecycle={o.lifecycle} detail={o.lifecycle_detail} />
                        {o.critical_result && (
                          <div>
                            <Badge tone="bad">⚠ critical result</Badge>
                          </div>
                        )}
                      </td>
                      <td>
                        <NextAction action={o.next_action} />
                      </td>
                      <td className="nowrap">{formatTime(o.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {orders.hasNextPage && (
              <div className="row">
                <button type="button" className="button secondary" onClick={() => orders.fetchNextPage()} disabled={orders.isFetchingNextPage}>
                  {orders.isFetchingNextPage ? 'Loading…' : 'Load older orders'}
                </button>
              </div>
            )}
          </>
        )}
      </article>
    </section>
  );
}

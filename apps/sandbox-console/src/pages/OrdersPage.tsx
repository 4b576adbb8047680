import { useInfiniteQuery } from '@tanstack/react-query';
import { NextAction, OrderState } from '../components/OrderState';
import { Empty, ErrorNotice, Loading } from '../components/states';
import { formatTime } from '../format';
import { href } from '../routing';
import { useTRPC } from '../trpc';

export function OrdersPage() {
  const trpc = useTRPC();
  const orders = useInfiniteQuery(
    trpc.console.orders.infiniteQueryOptions(
      { limit: 25 },
      { getNextPageParam: (last) => last.data.next_cursor ?? undefined },
    ),
  );
  const rows = orders.data?.pages.flatMap((p) => p.data.orders) ?? [];

  return (
    <section className="stack-lg">
      <header className="page-header">
        <h1>Orders</h1>
        <p className="lede">Your sandbox orders, newest first. Open one to run a scenario and follow its events, exceptions and results.</p>
      </header>
      <article className="card">
        {orders.isPending ? (
          <Loading label="Reading orders…" />
        ) : orders.isError ? (
          <ErrorNotice error={orders.error} onRetry={() => orders.refetch()} />
        ) : rows.length === 0 ? (
          <Empty>
            No sandbox orders yet. <a href={href.fixtures}>Create one from a fixture</a> in one click.
          </Empty>
        ) : (
          <>
            <div className="table-wrap">
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

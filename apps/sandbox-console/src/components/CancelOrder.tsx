import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useRef, useState } from 'react';
import { useCapability } from '../capabilities';
import { inputIs, useLatestCall } from '../inspector/call-log';
import { useTRPC } from '../trpc';
import { Inspector } from './Inspector';
import { ErrorNotice } from './states';

/**
 * POST /v1/orders/{orderId}/cancel from the order page. Offered in every state on purpose: the
 * 409 `order_not_cancellable` a partner gets once a specimen is collected is worth trying too.
 */
export function CancelOrder({ orderId, lifecycle }: { orderId: string; lifecycle: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const can = useCapability('orders.cancel');
  const [confirming, setConfirming] = useState(false);
  const sending = useRef(false);
  const reasonId = useId();
  const call = useLatestCall('orders.cancel', inputIs({ orderId }));
  const cancel = useMutation(
    trpc.orders.cancel.mutationOptions({
      onSuccess: () => {
        void queryClient.invalidateQueries(trpc.orders.get.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.orders.exceptions.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.console.orderScenarios.queryFilter({ orderId }));
        void queryClient.invalidateQueries(trpc.console.orders.pathFilter());
      },
      onSettled: () => {
        sending.current = false;
        setConfirming(false);
      },
    }),
  );
  const send = () => {
    if (sending.current || !can.allowed) return;
    sending.current = true;
    cancel.mutate({ orderId });
  };

  return (
    <div className="stack">
      <p className="muted small">
        An order can be cancelled until a specimen is collected (and a rejected order can be closed); after that the API answers <code>409 conflict</code>{' '}
        (<code>order_not_cancellable</code>) and changes nothing. Try either here.
      </p>
      {lifecycle === 'cancelled' && <p className="small">This order is cancelled: cancelling again shows what the API answers.</p>}
      <div className="row">
        {confirming ? (
          <>
            <button type="button" className="button secondary danger-button" onClick={send} disabled={cancel.isPending}>
              {cancel.isPending ? 'Cancelling…' : 'Yes, cancel this order'}
            </button>
            <button type="button" className="button ghost" onClick={() => setConfirming(false)}>
              Keep it
            </button>
          </>
        ) : (
          <button
            type="button"
            className="button secondary"
            onClick={() => {
              cancel.reset();
              setConfirming(true);
            }}
            disabled={!can.allowed}
            aria-describedby={can.allowed ? undefined : reasonId}
          >
            Cancel order…
          </button>
        )}
      </div>
      {!can.allowed && (
        <p id={reasonId} className="note note-warn small reason">
          {can.reason}
        </p>
      )}
      {cancel.isSuccess && (
        <p className="note note-good" role="status">
          Cancelled: the order is now <code>{cancel.data.data.lifecycle}</code> / <code>{cancel.data.data.lifecycle_detail}</code>, and an <code>order.cancelled</code> event
          was emitted.
        </p>
      )}
      {cancel.isError && <ErrorNotice error={cancel.error} title="The order was not cancelled." />}
      <Inspector label="Cancel request" call={call} />
    </div>
  );
}
